"""`aegis feed ls|gc` against a live feed: run by ctest with /usr/bin/python3,
PYTHONPATH naming the built extension and the aegis binary as argv[1].
Exit 77 (skip) without numpy."""
import json
import os
import shutil
import subprocess
import sys
import threading
import time

try:
    import numpy as np
except ImportError:
    sys.exit(77)

import aegis_feed

AEGIS = sys.argv[1]
NAME = "t-cli-%d" % os.getpid()


def aegis(*args, rc=0, user=None):
    """`aegis feed ARGS` (as user, through runuser, when given)."""
    as_user = ["runuser", "-u", user, "--"] if user else []
    res = subprocess.run([*as_user, AEGIS, "feed", *args],
                         capture_output=True, text=True)
    assert res.returncode == rc, (args, res.returncode, res.stderr)
    return res.stdout


def check_other_user(path):
    """Another user's gc leaves this live feed and says so, even when it is
    old enough to pass for half-made; ls names it unreadable, with its
    owner."""
    old = time.time() - 3600
    os.utime(path, (old, old))
    out = aegis("gc", user="daemon")
    assert "removed " + NAME not in out, out
    assert "left %s: user root's, which you may not open" % NAME in out, out
    assert os.path.exists(path), "another user's gc removed a live feed"
    feeds = [json.loads(line) for line in
             aegis("ls", "--json", user="daemon").splitlines()]
    mine = [f for f in feeds if f["name"] == NAME]
    assert mine and mine[0]["producer"] == "unreadable", mine
    assert mine[0]["owner"] == "root", mine


def listed():
    feeds = [json.loads(line) for line in aegis("ls", "--json").splitlines()]
    return [f for f in feeds if f["name"] == NAME]


def await_listed(what, check):
    """Polls `aegis feed ls` until check(feed) holds: the feed is made and
    read by other threads, with no event this process could wait on."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        mine = listed()
        if mine and check(mine[0]):
            return mine[0]
        time.sleep(0.01)
    raise AssertionError("never listed: " + what)


batch = np.zeros((4, 2), np.float32)
producer = aegis_feed.Producer([batch], name=NAME)
# The feed is made at the first batch, whose publish then waits for a
# consumer: publish from a thread (the extension releases the GIL).
publisher = threading.Thread(target=producer.publish, args=(batch,),
                             daemon=True)  # a failed check must not hang
publisher.start()
feed = await_listed("the new feed", lambda f: True)
assert feed["producer_pid"] == os.getpid(), feed
assert feed["producer"] == "alive", feed
assert NAME in aegis("ls"), "the table names the feed"
assert NAME not in aegis("gc"), "gc must keep a feed whose producer lives"
if os.geteuid() == 0 and shutil.which("runuser"):
    check_other_user("/dev/shm/aegis-feed-" + NAME)

consumer = aegis_feed.Consumer(name=NAME)
publisher.join(10)
assert not publisher.is_alive(), "publish did not return once a consumer came"
next(iter(consumer))
feed = await_listed("the consumer", lambda f: f["consumers"])
assert feed["consumers"][0]["pid"] == os.getpid(), feed
consumer.close()
producer.close()
assert listed() == [], "a closed feed is gone from ls"
aegis("bogus", rc=2)

# A FIFO under a feed's name (anyone may make one in /dev/shm) is no feed,
# and must not hang ls or gc: a read open of a FIFO waits for a writer.
fifo = "/dev/shm/aegis-feed-t-fifo-%d" % os.getpid()
os.mkfifo(fifo)
try:
    for sub in ("ls", "gc"):
        res = subprocess.run([AEGIS, "feed", sub], capture_output=True,
                             text=True, timeout=20)
        assert res.returncode == 0, (sub, res.stderr)
        assert "t-fifo" not in res.stdout, (sub, res.stdout)
finally:
    os.unlink(fifo)
print("aegis feed ls/gc: ok")
