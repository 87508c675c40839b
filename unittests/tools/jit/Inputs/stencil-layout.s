# Stencil assembly as clang-19 writes it for jit/baseline/stencils.cpp
# (shortened): the input of stencil-layout.test.
	.text
	.file	"stencils.cpp"
	.section	.text.vmjit_stencil_fused,"ax",@progbits
	.globl	vmjit_stencil_fused
	.p2align	4, 0x90
	.type	vmjit_stencil_fused,@function
vmjit_stencil_fused:                    # @vmjit_stencil_fused
	.cfi_startproc
# %bb.0:
	cmpl	$63, _JIT_REG_A(%r13)
	jg	_JIT_COLD                       # TAILCALL
# %bb.1:
	cmpl	$1, _JIT_REG_B(%r13)
	jne	.LBB0_3
# %bb.2:
	movq	_JIT_REG_B+8(%r13), %rax
	movq	$1, _JIT_REG_A(%r13)
	movq	%rax, _JIT_REG_A+8(%r13)
	jmp	_JIT_CONTINUE                   # TAILCALL
.LBB0_3:
	jmp	_JIT_COLD                       # TAILCALL
.Lfunc_end0:
	.size	vmjit_stencil_fused, .Lfunc_end0-vmjit_stencil_fused
	.cfi_endproc
                                        # -- End function
	.section	.text.vmjit_stencil_branch,"ax",@progbits
	.globl	vmjit_stencil_branch
	.p2align	4, 0x90
	.type	vmjit_stencil_branch,@function
vmjit_stencil_branch:                   # @vmjit_stencil_branch
	.cfi_startproc
# %bb.0:
	movl	_JIT_REG_A(%r13), %eax
	addl	$-3, %eax
	cmpl	$-3, %eax
	jbe	.LBB1_3
# %bb.1:
	cmpq	$0, _JIT_REG_A+8(%r13)
	jne	_JIT_CONTINUE                   # TAILCALL
# %bb.2:
	jmp	_JIT_TARGET                     # TAILCALL
.LBB1_3:
	pushq	%rax
	.cfi_def_cfa_offset 16
	movq	$_JIT_PC, 16(%r12)
	popq	%rax
	.cfi_def_cfa_offset 8
	jmp	_JIT_ERROR                      # TAILCALL
.Lfunc_end1:
	.size	vmjit_stencil_branch, .Lfunc_end1-vmjit_stencil_branch
	.cfi_endproc
                                        # -- End function
	.section	.text.vmjit_stencil_release,"ax",@progbits
	.globl	vmjit_stencil_release
	.p2align	4, 0x90
	.type	vmjit_stencil_release,@function
vmjit_stencil_release:                  # @vmjit_stencil_release
	.cfi_startproc
# %bb.0:
	movq	_JIT_REG_A+8(%r13), %rdi
	cmpl	$64, _JIT_REG_A(%r13)
	jl	.LBB2_2
# %bb.1:
	lock		decq	(%rdi)
	je	.LBB2_3
.LBB2_2:
	movq	$0, _JIT_REG_A(%r13)
	jmp	_JIT_CONTINUE                   # TAILCALL
.LBB2_3:
	.p2align	4, 0x90
	#APP
	movabsq	$_JIT_DESTROY, %rax
	#NO_APP
	callq	*%rax
	jmp	.LBB2_2
.Lfunc_end2:
	.size	vmjit_stencil_release, .Lfunc_end2-vmjit_stencil_release
	.cfi_endproc
                                        # -- End function
	.section	.text.helper,"ax",@progbits
	.type	helper,@function
helper:
	jne	.LBB3_1
	ret
.LBB3_1:
	jmp	_JIT_COLD
.Lfunc_end3:
	.size	helper, .Lfunc_end3-helper
