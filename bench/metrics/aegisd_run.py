"""aegisd_run.py -- what the /metrics benchmarks share: an aegisd on 3
test GPUs in a fresh folder, serving /metrics on a free loopback port,
and the aegis CLI pointed at it (bench-scale takes its free_port too)."""
import os
import shutil
import signal
import socket
import subprocess
import tempfile


def free_port():
    """A loopback TCP port free now (the kernel picks it)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def add_binaries(ap, aegis_help):
    """The arguments every /metrics benchmark takes: aegisd, aegis (what
    aegis_help says it does) and the test NVML library."""
    ap.add_argument("aegisd", help="the aegisd binary to measure")
    ap.add_argument("aegis", help=aegis_help)
    ap.add_argument("nvml", help="the test NVML library (aegis-testnvml) "
                    "that gives aegisd its 3 GPUs")


class Aegisd:
    """aegisd started with `config` (YAML lines) added to a short-window
    configuration; .pid, .port, .tmp (its folder) and .env (for aegis)."""

    def __init__(self, aegisd, aegis, nvml, config="", prefix="aegis-bench-"):
        self.aegis_bin = aegis
        self.tmp = tmp = tempfile.mkdtemp(prefix=prefix)
        self.port = free_port()
        self.env = dict(os.environ, AEGIS_SOCKET=f"{tmp}/aegis.sock",
                        AEGIS_TEST_GPUS="3x40960",
                        AEGIS_TEST_GPU_DIR=f"{tmp}/gpu",
                        AEGIS_NVML_LIBRARY=nvml)
        os.mkdir(f"{tmp}/gpu")
        with open(f"{tmp}/aegis.yaml", "w") as f:
            f.write(f"window_samples: 2\nobserve_s: 1\n{config}"
                    f"metrics_listen: 127.0.0.1:{self.port}\n")
        subprocess.run([aegisd, "--socket", self.env["AEGIS_SOCKET"],
                        "--state-dir", f"{tmp}/state", "--config",
                        f"{tmp}/aegis.yaml"], env=self.env, check=True)
        with open(f"{tmp}/state/aegisd.lock") as f:
            self.pid = int(f.read())

    def aegis(self, *args):
        """`aegis ARGS...`'s output; an error raises."""
        return subprocess.run([self.aegis_bin, *args], env=self.env,
                              cwd=self.tmp, check=True, capture_output=True,
                              text=True).stdout

    def stop(self):
        """Stops aegisd and removes its folder."""
        os.kill(self.pid, signal.SIGTERM)
        shutil.rmtree(self.tmp, ignore_errors=True)
