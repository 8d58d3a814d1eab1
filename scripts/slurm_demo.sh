#!/usr/bin/env bash
# A worked example on a real scheduler: installs Slurm and MUNGE from Debian's packages when missing, starts a
# one-node cluster on this machine (its state in a temporary directory, stopped on exit), submits the bundled
# dataset as an array job of 4 shards (scripts/slurm/shards.sbatch) and a merge job that depends on it
# (scripts/slurm/merge.sbatch), and checks that the merged run's tables and per-strategy figures equal one
# `ctxbench run`'s byte for byte.
#
# usage: scripts/slurm_demo.sh [SHARDS=4]   (as root, or with sudo rights for apt-get and the daemons)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SHARDS=${1:-4}
log() { printf '[%s] %s\n' "$(date +%T)" "$*"; }
fail() { log "FAILED: $*"; exit 1; }

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    log "installing slurm-wlm and munge (Debian packages)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q slurm-wlm munge >/dev/null 2>&1 || { apt-get update -q >/dev/null; apt-get install -y -q slurm-wlm munge >/dev/null; }
fi
cargo build --release --quiet
export CTXBENCH="$ROOT/target/release/ctxbench"

WORK=$(mktemp -d /tmp/ctxbench-slurm.XXXXXX)
chmod 755 "$WORK"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    [ -n "${MUNGE_PID:-}" ] && kill "$MUNGE_PID" 2>/dev/null || true
}
trap cleanup EXIT

# MUNGE: Slurm's authentication. A key of its own for this demo, a socket in the work directory.
mkdir -p "$WORK/munge"
dd if=/dev/urandom bs=1 count=1024 of="$WORK/munge/munge.key" status=none
chown -R munge:munge "$WORK/munge" 2>/dev/null || true
chmod 755 "$WORK/munge"; chmod 400 "$WORK/munge/munge.key"
SOCKET="$WORK/munge/munge.socket"
runuser -u munge -- munged --key-file="$WORK/munge/munge.key" --socket="$SOCKET" \
    --pid-file="$WORK/munge/munged.pid" --log-file="$WORK/munge/munged.log" --seed-file="$WORK/munge/seed" \
    || fail "munged did not start (see $WORK/munge/munged.log)"
MUNGE_PID=$(cat "$WORK/munge/munged.pid")

# Slurm: one node, this machine, its CPUs; state, spool and logs in the work directory.
NODE=$(hostname -s)
CPUS=$(nproc)
MEM=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 512 ))
mkdir -p "$WORK/state" "$WORK/spool" "$WORK/jobs"
export SLURM_CONF="$WORK/slurm.conf"
cat > "$SLURM_CONF" <<EOF
ClusterName=ctxbench
SlurmctldHost=$NODE
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$SOCKET
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/slurmctld.log
SlurmdLogFile=$WORK/slurmd.log
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
NodeName=$NODE CPUs=$CPUS RealMemory=$MEM State=UNKNOWN
PartitionName=demo Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -i >"$WORK/slurmctld.out" 2>&1 & PIDS+=($!)
slurmd -D -N "$NODE" >"$WORK/slurmd.out" 2>&1 & PIDS+=($!)
for _ in $(seq 1 60); do
    sinfo -h -o '%t' 2>/dev/null | grep -qE '^(idle|mix|alloc)' && break
    sleep 1
done
sinfo -h -o '%t' | grep -qE '^(idle|mix|alloc)' || { tail -5 "$WORK/slurmctld.log" "$WORK/slurmd.log" 2>/dev/null; fail "the node did not come up"; }
log "one-node Slurm cluster up: $(sinfo -h -o '%P %D nodes %c CPUs %t')"

# The array job of shards, then the merge once every shard succeeded.
DATA="$ROOT/datasets/default.jsonl"
cd "$WORK/jobs"
ARRAY=$(sbatch --parsable --array=0-$((SHARDS - 1)) "$ROOT/scripts/slurm/shards.sbatch" "$DATA" "$WORK/shard" --name demo)
MERGE=$(sbatch --parsable --dependency=afterok:"$ARRAY" "$ROOT/scripts/slurm/merge.sbatch" "$WORK/shard" "$WORK/merged" demo)
log "submitted array job $ARRAY ($SHARDS shards) and merge job $MERGE (afterok:$ARRAY)"
start=$SECONDS
while squeue -h -j "$ARRAY,$MERGE" 2>/dev/null | grep -q .; do
    (( SECONDS - start < 600 )) || { squeue; fail "the jobs did not finish in 10 minutes"; }
    sleep 1
done
cat "$WORK"/jobs/ctxbench-merge-*.out 2>/dev/null | tail -3
[ -f "$WORK/merged/summary.json" ] || { tail -n 5 "$WORK"/jobs/*.out; fail "the merge job wrote no run"; }
log "jobs done in $((SECONDS - start)) s"

# One run of the same dataset and config: the merged run must equal it.
"$CTXBENCH" run --dataset "$DATA" --out "$WORK/single" --name demo >/dev/null
for f in steps.csv episodes.csv findings.csv llm_calls.jsonl summary.json report.md; do
    cmp -s "$WORK/single/$f" "$WORK/merged/$f" || fail "$f of the merged run differs from one run's"
done
log "merged run of $SHARDS Slurm array tasks = one ctxbench run (steps, episodes, findings, calls, summary, report)"
log "Slurm demo passed"
