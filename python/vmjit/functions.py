"""Global functions: Python callables as packed functions that programs
call by name, as tvm.register_func / tvm.get_global_func."""

from __future__ import annotations

from typing import (Callable, List, Literal, Optional, TypeVar, Union,
                    overload)

from . import _vmjit

# A Python function registered as a packed function.
_F = TypeVar("_F", bound=Callable[..., object])


@overload
def register_func(func_name: _F) -> _F: ...
@overload
def register_func(func_name: str, f: None = None,
                  override: bool = False) -> Callable[[_F], _F]: ...
@overload
def register_func(func_name: str, f: _F,
                  override: bool = False) -> _F: ...


def register_func(func_name: Union[str, _F], f: Optional[_F] = None,
                  override: bool = False) -> Union[_F, Callable[[_F], _F]]:
    """Registers ``f`` as the packed function ``func_name``.

    As ``tvm.register_func``: ``register_func("my.scale", fn)``, or as a
    decorator, ``@register_func("my.scale")`` or ``@register_func`` (the
    function's ``__name__``). A program's ``call my.scale(...)`` then calls
    it, in every mode: arguments arrive as Python values (tensors as
    ``vmjit.Tensor`` over the VM's memory), the return value goes back as
    any argument would. An exception it raises unwinds the VM and comes
    out of the outer call as itself.

    VMs resolve packed functions when they are created: register before
    making the VM. A name already registered (the standard library's too)
    raises ``ValueError`` unless ``override=True``; a replaced standard
    function is called, never inlined by the JIT. Returns ``f``.
    """
    return _register(func_name, f, override)


def _register(func_name: Union[str, _F], f: Optional[_F],
              override: bool) -> Union[_F, Callable[[_F], _F]]:
    """register_func and register_global_func."""
    if isinstance(func_name, str):
        name = func_name
    elif callable(func_name) and f is None:
        f, name = func_name, func_name.__name__
    else:
        raise TypeError("register_func: the name must be a str, not %r"
                        % type(func_name).__name__)

    def register(fn: _F) -> _F:
        _vmjit.register_func(name, fn, override)
        return fn

    return register if f is None else register(f)


@overload
def register_global_func(func_name: _F) -> _F: ...
@overload
def register_global_func(func_name: str, f: None = None,
                         override: bool = False) -> Callable[[_F], _F]: ...
@overload
def register_global_func(func_name: str, f: _F,
                         override: bool = False) -> _F: ...


def register_global_func(func_name: Union[str, _F], f: Optional[_F] = None,
                         override: bool = False
                         ) -> Union[_F, Callable[[_F], _F]]:
    """tvm-ffi's name of :func:`register_func`, with the same arguments and
    behaviour (also as a decorator)."""
    return _register(func_name, f, override)


@overload
def get_global_func(name: str, allow_missing: Literal[False] = False
                    ) -> _vmjit.Function: ...
@overload
def get_global_func(name: str, allow_missing: bool
                    ) -> Optional[_vmjit.Function]: ...


def get_global_func(name: str, allow_missing: bool = False
                    ) -> Optional[_vmjit.Function]:
    """The global function ``name`` (the standard library's, a kernel
    library's registration, or a registered Python function) as a
    :class:`vmjit.Function`; ``None`` if there is none and
    ``allow_missing``, else ``vmjit.LookupError``."""
    return _vmjit.get_global_func(name, allow_missing)


def remove_global_func(name: str) -> bool:
    """Removes ``name`` from the global registry; returns whether it was
    there. VMs already made keep what they resolved."""
    return _vmjit.remove_global_func(name)


def list_global_func_names() -> List[str]:
    """The names of every global function, sorted."""
    return _vmjit.list_global_func_names()

