#!/bin/sh
# self_contained.sh SOURCE_DIR -- the repository holds every file its
# README, tools and tests use: no file names the sibling folder the data
# was first collected in, and the measurement files the fidelity and
# estimator checks read are under data/.
set -u
SRC=$1
cd "$SRC" || exit 1
status=0

# The files of the repository: git's list in a clone, else every file but
# build trees (an unpacked release).
files() {
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files --cached --others --exclude-standard
    else
        find . -path './build*' -prune -o -path ./.git -prune -o -type f -print
    fi
}
# As a path or as Python's path parts; spelled in two parts so that this
# file does not match itself.
outside='\.\./shar''ed|"\.\.", "shar''ed"'
hits=$(files | tr '\n' '\0' | xargs -0 grep -nIE "$outside" 2>/dev/null)
if [ -n "$hits" ]; then
    echo "files name a folder outside the repository:"
    echo "$hits"
    status=1
fi

for f in workloads.csv results_per_policy.csv results_per_job.csv \
         aegis_pairwise_colocation_a100.csv traces/philly.csv \
         traces/saturn.csv traces/venus.csv gpumemnet/real_models.csv \
         gpumemnet/mlp_data_step1.csv gpumemnet/mlp_data_step2.csv \
         README.md; do
    [ -s "data/$f" ] || { echo "data/$f: missing"; status=1; }
done
# Lucid's pair speeds are licensed for non-commercial use only: not shipped.
[ ! -e data/lucid_colocate.csv ] ||
    { echo "data/lucid_colocate.csv: must not be redistributed"; status=1; }
exit $status
