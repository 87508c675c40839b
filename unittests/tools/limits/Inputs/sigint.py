"""Starts `vmjit run PROG --mode MODE [OPTION...]` on an endless loop, sends
SIGINT once it has run for a while, and prints its exit status, stdout and
stderr."""
import signal
import subprocess
import sys
import time

vmjit, prog, mode = sys.argv[1:4]
options = sys.argv[4:]
# A signal that arrives before the call starts (while the process loads,
# or compiles in compiled mode, slowly under a sanitizer) kills it the
# default way: then try again, waiting longer. The child gets the default
# SIGINT action back: lit's workers ignore SIGINT, and a child would
# inherit that and drop an early signal, then loop forever.
def default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


for delay in [0.5, 2.0, 8.0, 30.0, 60.0]:
    p = subprocess.Popen([vmjit, "run", prog, "--mode", mode] + options,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, preexec_fn=default_sigint)
    time.sleep(delay)
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        print("vmjit did not stop after SIGINT")
        sys.exit(1)
    if p.returncode != -signal.SIGINT:
        break
print(f"exit {p.returncode}")
sys.stdout.write(out)
sys.stdout.write(err)
