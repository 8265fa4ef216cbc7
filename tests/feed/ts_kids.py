"""Child processes of the tensorsocket tests: the scripts under
tensorsocket_usage/, started, and awaited until they wait for their
producer (an event they log, never a delay)."""
import os
import select
import subprocess
import sys
import time

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                    "tensorsocket_usage")


def run(script, *args):
    """tensorsocket_usage/SCRIPT ARGS..., its output piped as text."""
    return subprocess.Popen([sys.executable, os.path.join(HERE, script),
                             *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def await_waiting(kid, seconds=30):
    """Until kid logs that it waits for its producer."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([kid.stderr], [], [],
                                    deadline - time.monotonic())
        line = kid.stderr.readline() if ready else ""
        if "waiting for the producer" in line:
            return
        assert line or not ready, "consumer ended: " + kid.stderr.read()
    raise AssertionError("consumer did not wait for its producer")
