#!/bin/bash
# Several `lab/scripts/gpu_learn.py` runs side by side on one GPU machine, to choose the CPU demo's recipe by
# measurement (docs/learning.md, "Learning the subject"). Each line of CONFIGS is `name: gpu_learn.py arguments`.
# Every run gets its own output folder in a scratch directory; its report, curves, summary, curve, contact sheet and the end of
# its log are packed into OUT/sweep.tar.gz (the converted model stays behind). Runs past LIMIT_S seconds are
# stopped, keeping their curves.
#
#     source lab/scripts/gpu_render_env.sh PARTS; bash lab/scripts/gpu_learn_sweep.sh GGUF CONFIGS OUT [LIMIT_S]
set -uo pipefail
gguf=$1 configs=$2 out=$3 limit=${4:-480}
work=$(mktemp -d)
mkdir -p "$out" "$work/runs" "$work/out"
while IFS=: read -r name arguments; do
    [ -z "$name" ] || [ "${name:0:1}" = "#" ] && continue
    # The arguments as a shell would read them, quotes included ("training.subject=a blue morning glory").
    eval "set -- $arguments"
    OMP_NUM_THREADS=1 timeout "$limit" python3 lab/scripts/gpu_learn.py --gguf "$gguf" --out "$work/runs/$name" \
        --no-trackio --browsers 2 "$@" > "$work/runs/$name.log" 2>&1 &
done < "$configs"
wait
for run in "$work"/runs/*/; do
    name=$(basename "$run")
    mkdir -p "$work/out/$name"
    cp "$run"/gpu_learn.json "$run"/run/curves.csv "$run"/run/summary.json "$run"/run/curve.svg \
        "$run"/run/first-last.png "$run"/run/warmstart/warmstart.json "$work/out/$name/" 2>/dev/null
    grep -v 'it/s\]\|s/it\]\|examples/s\]' "$work/runs/$name.log" | tail -80 > "$work/out/$name/log-tail.txt"
    grep -o 'Assertion.*failed' "$work/runs/$name.log" | head -3 >> "$work/out/$name/log-tail.txt"
    printf '%s\t' "$name"
    python3 - "$run/run/curves.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
reward = [round(float(r["reward_mean"]), 2) for r in rows]
subject = [round(float(r["on_subject_share"]), 2) for r in rows if r.get("on_subject_share")]
gate = [round(float(r["gate_pass_rate"]), 2) for r in rows]
print(f"steps {len(rows)} reward {reward} on-subject {subject} gate {gate}")
PY
    grep -q 'Assertion' "$work/runs/$name.log" && echo "    stopped by a device-side assert"
done
tar -czf "$out/sweep.tar.gz" -C "$work/out" .
