#!/bin/sh
# gpu_check.sh -- build the feed and run its GPU tests, for a session that
# has a GPU: sh tests/feed/gpu_check.sh [BUILD_DIR]
#
# Prints the driver and GPU seen, then each test's result. A GPU test that
# reports "Skipped" here means the GPU was not usable (the reason is in its
# output below): that is a failure of the check, not a pass.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build-gpu}
jobs=$(nproc 2>/dev/null || echo 2)

nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv,noheader \
  2>&1 | sed 's/^/gpu: /'
cmake -S "$root" -B "$build" -DAEGIS_WERROR=ON >"$build.configure.log" 2>&1 ||
  { tail -20 "$build.configure.log"; exit 1; }
grep 'aegis_feed: CUDA' "$build.configure.log"
# the interpreter the Python tests run with, as CMake found it
python=$(sed -n 's/^AEGIS_FEED_PYTHON:INTERNAL=//p' "$build/CMakeCache.txt")
"${python:-python3}" -c 'import torch; print("torch", torch.__version__,
  "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1 |
  sed "s|^|${python:-python3}: |"
cmake --build "$build" -j"$jobs" --target aegis_feed _aegis_feed test_feed \
  test_feed_gpu fake_libcuda >"$build.build.log" 2>&1 ||
  { tail -30 "$build.build.log"; exit 1; }

# feed_gpu_c and feed_gpu_python are the real-GPU tests; the others guard
# what they build on.
ctest --test-dir "$build" -R 'feed_(c|cuda_fake|gpu_c|python|gpu_python)$' \
  --output-on-failure -V 2>&1 |
  grep -E '^[0-9]+: (cuda:|ok|skipped|FAIL|test_feed|fake)|Test +#|tests passed|Skipped|Failed'
skipped=$(ctest --test-dir "$build" -R 'feed_gpu_(c|python)$' 2>&1 |
  sed -n 's/.*Test *#[0-9]*: \(feed_gpu_[a-z]*\) .*Skipped.*/\1/p')
[ -z "$skipped" ] ||
  { echo "gpu_check: FAIL: skipped (reason above):" $skipped; exit 1; }
ctest --test-dir "$build" -R 'feed_(c|cuda_fake|gpu_c|python|gpu_python)$' \
  >/dev/null 2>&1 && echo "gpu_check: PASS" || { echo "gpu_check: FAIL"; exit 1; }
