#!/usr/bin/python3
"""acceptance.py -- what acceptance.sh asks of the machine beside aegis.

It reads NVML directly (ctypes, the same library aegisd loads), so the
acceptance run has a second opinion on every figure aegis reports, and it
turns nvidia-smi's CSV and the run's result lines into JSON. Standard
library only: it runs on any server with python3.

    acceptance.py probe LIB            the GPUs as NVML reports them (JSON)
    acceptance.py smi                  the GPUs as nvidia-smi reports them
    acceptance.py compare AEGIS REF    aegis gpus --json against REF, within 5%
    acceptance.py set-mig LIB GPU MODE MIG mode 0 or 1 (restores a GPU)
    acceptance.py mps-procs PIPE_DIR   MPS control daemons and servers of PIPE_DIR
    acceptance.py lists LIB GPU PID    which of NVML's process lists (compute,
                                       MPS) hold PID (JSON)
    acceptance.py dcgm-watch LIB       watch SMACT, SMOCC and DRAMA in one
                                       field group, as aegisd does: exit 0
                                       one pass, 3 refused (the reason on
                                       stdout), 4 no profiling here
    acceptance.py dcgm-hold LIB SECS   the same watch, held for SECS seconds
                                       ("watching" on stdout once it is)
    acceptance.py summary RESULTS OUT KEY=VALUE...   the JSON summary

Exit status: 0 done (compare: all within tolerance), 1 failed (the reason
on stderr, or the differences on stdout), 2 bad usage.
"""
import ctypes
import json
import os
import subprocess
import sys

NVML_SUCCESS = 0


class Memory(ctypes.Structure):
    _fields_ = [('total', ctypes.c_ulonglong), ('free', ctypes.c_ulonglong),
                ('used', ctypes.c_ulonglong)]


class Utilization(ctypes.Structure):
    _fields_ = [('gpu', ctypes.c_uint), ('memory', ctypes.c_uint)]


class ProcessInfo(ctypes.Structure):
    """The 24-byte entry _v2 fills on every driver from 450.66 on."""
    _fields_ = [('pid', ctypes.c_uint), ('usedGpuMemory', ctypes.c_ulonglong),
                ('gpuInstanceId', ctypes.c_uint),
                ('computeInstanceId', ctypes.c_uint)]


class ProfileInfo(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint) for n in (
        'id', 'isP2pSupported', 'sliceCount', 'instanceCount',
        'multiprocessorCount', 'copyEngineCount', 'decoderCount',
        'encoderCount', 'jpegCount', 'ofaCount')] + [
        ('memorySizeMB', ctypes.c_ulonglong)]


# NVML_GPU_INSTANCE_PROFILE_* numbers a probe asks about (0..9 cover the
# profiles of A100, H100 and H200; others answer NOT_SUPPORTED).
GPU_INSTANCE_PROFILES = range(10)


class Nvml:
    """The NVML library at `path`, initialised."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.call('nvmlInit_v2')

    def has(self, name):
        return hasattr(self.lib, name)

    def call(self, name, *args):
        rc = getattr(self.lib, name)(*args)
        if rc != NVML_SUCCESS:
            raise NvmlError(name, rc)

    def handle(self, index):
        h = ctypes.c_void_p()
        self.call('nvmlDeviceGetHandleByIndex_v2', ctypes.c_uint(index),
                  ctypes.byref(h))
        return h

    def text(self, name, *args):
        buf = ctypes.create_string_buffer(256)
        self.call(name, *args, buf, ctypes.c_uint(len(buf)))
        return buf.value.decode(errors='replace')


class NvmlError(Exception):
    def __init__(self, call, rc):
        super().__init__('%s returned %d' % (call, rc))


def optional(fn):
    """fn(), or None when NVML does not support it here."""
    try:
        return fn()
    except (NvmlError, AttributeError):
        return None


def list_pids(nvml, h, kind):
    """The pids of NVML's process list `kind` ('Compute' or 'MPSCompute')
    of GPU h, through _v2 (24-byte entries on every driver); None when the
    library has no such list."""
    name = 'nvmlDevice%sRunningProcesses_v2' % ('Get' + kind)
    if not nvml.has(name):
        return None
    procs = (ProcessInfo * 256)()
    count = ctypes.c_uint(len(procs))
    nvml.call(name, h, ctypes.byref(count), procs)
    return sorted(procs[i].pid for i in range(count.value))


def probe_pids(nvml, h):
    """The pids of NVML's compute and MPS process lists of GPU h, joined
    (MPS clients are in the second only); None without the compute one."""
    compute = list_pids(nvml, h, 'Compute')
    mps = optional(lambda: list_pids(nvml, h, 'MPSCompute')) or []
    return None if compute is None else sorted(set(compute) | set(mps))


def probe_mig(nvml, h):
    cur, pend = ctypes.c_uint(), ctypes.c_uint()
    nvml.call('nvmlDeviceGetMigMode', h, ctypes.byref(cur), ctypes.byref(pend))
    profiles = []
    for p in GPU_INSTANCE_PROFILES:
        info = ProfileInfo()
        if optional(lambda: nvml.call('nvmlDeviceGetGpuInstanceProfileInfo',
                                      h, ctypes.c_uint(p),
                                      ctypes.byref(info))) is None:
            continue
        if info.instanceCount == 0:
            continue
        profiles.append({'nvml_profile': p, 'id': info.id,
                         'slices': info.sliceCount,
                         'instances': info.instanceCount,
                         'mem_mib': info.memorySizeMB})
    return {'current': cur.value, 'pending': pend.value, 'profiles': profiles}


def probe_gpu(nvml, i):
    h = nvml.handle(i)
    mem = Memory()
    nvml.call('nvmlDeviceGetMemoryInfo', h, ctypes.byref(mem))
    util, mw, mj = Utilization(), ctypes.c_uint(), ctypes.c_ulonglong()
    return {
        'index': i,
        'name': nvml.text('nvmlDeviceGetName', h),
        'uuid': nvml.text('nvmlDeviceGetUUID', h),
        'total_mib': mem.total / 1048576.0,
        'used_mib': mem.used / 1048576.0,
        'util_pct': optional(lambda: nvml.call(
            'nvmlDeviceGetUtilizationRates', h, ctypes.byref(util))
            or util.gpu),
        'power_w': optional(lambda: nvml.call(
            'nvmlDeviceGetPowerUsage', h, ctypes.byref(mw)) or mw.value / 1e3),
        'energy_j': optional(lambda: nvml.call(
            'nvmlDeviceGetTotalEnergyConsumption', h, ctypes.byref(mj))
            or mj.value / 1e3),
        'pids': optional(lambda: probe_pids(nvml, h)),
        'mig': optional(lambda: probe_mig(nvml, h)),
    }


def cmd_probe(lib):
    nvml = Nvml(lib)
    count = ctypes.c_uint()
    nvml.call('nvmlDeviceGetCount_v2', ctypes.byref(count))
    out = {'library': lib,
           'driver': optional(lambda: nvml.text('nvmlSystemGetDriverVersion')),
           'gpus': [probe_gpu(nvml, i) for i in range(count.value)]}
    json.dump(out, sys.stdout)
    print()


def smi_number(text):
    try:
        return float(text)
    except ValueError:
        return None  # "[N/A]", "[Not Supported]"


def cmd_smi():
    fields = 'index,name,memory.total,memory.used,utilization.gpu,power.draw'
    out = subprocess.run(['nvidia-smi', '--query-gpu=' + fields,
                          '--format=csv,noheader,nounits'],
                         capture_output=True, text=True, timeout=60,
                         check=True).stdout
    gpus = []
    for line in out.splitlines():
        f = [x.strip() for x in line.split(',')]
        if len(f) != 6:
            continue
        gpus.append({'index': int(f[0]), 'name': f[1],
                     'total_mib': smi_number(f[2]),
                     'used_mib': smi_number(f[3]),
                     'util_pct': smi_number(f[4]), 'power_w': smi_number(f[5])})
    json.dump({'gpus': gpus}, sys.stdout)
    print()


def compare_gpu(a, r):
    """Differences of aegis's GPU a from the reference's r: within 5% of
    the GPU's memory, 5 points of utilization, 5% (at least 5 W) of power."""
    bad, worst = [], {}
    if a['name'] != r['name']:
        bad.append('name %r != %r' % (a['name'], r['name']))
    total = r['total_mib'] or a['total_mib']
    checks = [('total_mib', a['total_mib'], r['total_mib'], 0.05 * total),
              ('used_mib', a['used_mib'], r['used_mib'], 0.05 * total)]
    if a['util'] is not None and a['util'] >= 0 and r['util_pct'] is not None:
        checks.append(('util_pct', 100 * a['util'], r['util_pct'], 5))
    if a['power_w'] is not None and a['power_w'] >= 0 and r['power_w']:
        checks.append(('power_w', a['power_w'], r['power_w'],
                       max(5, 0.05 * r['power_w'])))
    for name, got, want, slack in checks:
        worst[name] = round(abs(got - want), 1)
        if want is None or abs(got - want) > slack:
            bad.append('%s %.1f vs %s' % (name, got, want))
    return bad, worst


def cmd_compare(aegis_path, ref_path):
    aegis = json.load(open(aegis_path))['gpus']
    ref = {g['index']: g for g in json.load(open(ref_path))['gpus']}
    bad = []
    if len(aegis) != len(ref):
        bad.append('aegis sees %d GPUs, the reference %d' % (len(aegis),
                                                            len(ref)))
    worst = {}
    for a in aegis:
        r = ref.get(a['index'])
        if r is None:
            continue
        b, w = compare_gpu(a, r)
        bad += ['GPU %d: %s' % (a['index'], x) for x in b]
        for k, v in w.items():
            worst[k] = max(worst.get(k, 0), v)
    figure = '%d GPUs, largest differences: %s' % (len(aegis), ', '.join(
        '%s %s' % kv for kv in sorted(worst.items())))
    print(figure + ('; ' + '; '.join(bad) if bad else ''))
    return 1 if bad else 0


def cmd_set_mig(lib, gpu, mode):
    nvml = Nvml(lib)
    status = ctypes.c_uint()
    rc = nvml.lib.nvmlDeviceSetMigMode(nvml.handle(int(gpu)),
                                       ctypes.c_uint(int(mode)),
                                       ctypes.byref(status))
    print('nvmlDeviceSetMigMode %s -> %d, activation status %d'
          % (mode, rc, status.value))
    return 0 if rc == NVML_SUCCESS else 1


def cmd_mps_procs(pipe_dir):
    """Pids of MPS control daemons and servers whose pipe folder is
    pipe_dir (jobs have the variable too: they are not counted)."""
    want = b'CUDA_MPS_PIPE_DIRECTORY=' + os.fsencode(pipe_dir)
    pids = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                argv0 = os.path.basename(f.read().split(b'\0')[0])
            with open('/proc/%s/environ' % pid, 'rb') as f:
                env = f.read().split(b'\0')
        except OSError:
            continue  # gone, or not ours to read
        if argv0.endswith((b'mps-control', b'mps-server')) and want in env:
            pids.append(pid)
    print(' '.join(pids))


def cmd_lists(lib, gpu, pid):
    """Which process lists of GPU `gpu` hold pid: true, false, or null for
    a list the library does not have."""
    nvml = Nvml(lib)
    h = nvml.handle(int(gpu))
    out = {}
    for key, kind in (('compute', 'Compute'), ('mps', 'MPSCompute')):
        pids = list_pids(nvml, h, kind)
        out[key] = None if pids is None else int(pid) in pids
    json.dump(out, sys.stdout)
    print()


# DCGM's answers dcgm-watch tells apart (dcgm_structs.h).
DCGM_ST_IN_USE = -34
DCGM_ST_PROFILING_NOT_SUPPORTED = -36
DCGM_ST_PROFILING_MULTI_PASS = -38
DCGM_GROUP_ALL_GPUS = 0x7fffffff
DCGM_OPERATION_MODE_AUTO = 1
PROF_FIELDS = (1002, 1003, 1005)  # SMACT, SMOCC, DRAMA


def dcgm_watch(lib):
    """Starts an embedded DCGM engine and watches the three profiling
    fields in one field group on every GPU, as aegisd does. Returns
    (library, rc of dcgmWatchFields)."""
    dcgm = ctypes.CDLL(lib)
    rc = dcgm.dcgmInit()
    if rc:
        raise OSError('dcgmInit returned %d' % rc)
    handle = ctypes.c_void_p()
    rc = dcgm.dcgmStartEmbedded(DCGM_OPERATION_MODE_AUTO, ctypes.byref(handle))
    if rc:
        raise OSError('dcgmStartEmbedded returned %d' % rc)
    fields = (ctypes.c_ushort * 3)(*PROF_FIELDS)
    group = ctypes.c_void_p()
    rc = dcgm.dcgmFieldGroupCreate(handle, 3, fields, b'aegis-acceptance',
                                   ctypes.byref(group))
    if rc:
        raise OSError('dcgmFieldGroupCreate returned %d' % rc)
    dcgm.dcgmWatchFields.argtypes = [
        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong,
        ctypes.c_double, ctypes.c_int]
    return dcgm, dcgm.dcgmWatchFields(handle, DCGM_GROUP_ALL_GPUS, group,
                                      1000000, 10.0, 4)


def cmd_dcgm_watch(lib):
    _, rc = dcgm_watch(lib)
    why = {0: 'SMACT, SMOCC and DRAMA watched in one pass',
           DCGM_ST_PROFILING_MULTI_PASS: 'refused: the three need more than '
           'one pass on this GPU (DCGM_ST_PROFILING_MULTI_PASS)',
           DCGM_ST_IN_USE: 'refused: another host engine or a profiler holds '
           'the profiling counters (DCGM_ST_IN_USE)',
           DCGM_ST_PROFILING_NOT_SUPPORTED: 'no profiling metrics on this GPU'}
    print(why.get(rc, 'dcgmWatchFields returned %d' % rc))
    return 0 if rc == 0 else 4 if rc == DCGM_ST_PROFILING_NOT_SUPPORTED else 3


def cmd_dcgm_hold(lib, secs):
    import time
    _, rc = dcgm_watch(lib)
    if rc:
        raise OSError('dcgmWatchFields returned %d' % rc)
    print('watching', flush=True)
    time.sleep(float(secs))


def cmd_summary(results, out, *pairs):
    """results: lines "N<TAB>NAME<TAB>RESULT<TAB>SECONDS<TAB>FIGURE"."""
    summary = {}
    for key, value in (p.split('=', 1) for p in pairs):
        summary[key] = (int(value) if value.isdigit() else
                        None if value in ('', 'None') else value)
    checks = []
    for line in open(results):
        n, name, result, at, figure = line.rstrip('\n').split('\t', 4)
        checks.append({'check': int(n), 'name': name, 'result': result,
                       'figure': figure, 'at_s': int(at)})
    summary['checks'] = checks
    for r in ('PASS', 'FAIL', 'SKIP'):
        summary[r.lower()] = sum(c['result'] == r for c in checks)
    with open(out + '.tmp', 'w') as f:
        json.dump(summary, f, indent=2)
        f.write('\n')
    os.replace(out + '.tmp', out)


COMMANDS = {'probe': (cmd_probe, 1), 'smi': (cmd_smi, 0),
            'compare': (cmd_compare, 2), 'set-mig': (cmd_set_mig, 3),
            'mps-procs': (cmd_mps_procs, 1), 'lists': (cmd_lists, 3),
            'dcgm-watch': (cmd_dcgm_watch, 1), 'dcgm-hold': (cmd_dcgm_hold, 2),
            'summary': (cmd_summary, None)}


def main(argv):
    cmd = COMMANDS.get(argv[1] if len(argv) > 1 else '')
    nargs = len(argv) - 2
    if not cmd or (cmd[1] is not None and nargs != cmd[1]) or (
            cmd[1] is None and nargs < 2):
        sys.stderr.write(__doc__)
        return 2
    try:
        return cmd[0](*argv[2:]) or 0
    except (OSError, NvmlError, subprocess.SubprocessError, ValueError) as e:
        print('acceptance.py %s: %s' % (argv[1], e), file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
