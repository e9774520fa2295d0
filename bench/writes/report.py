"""bench/writes/report.py: report.md and writes.png from raw.jsonl.

    python3 report.py RAW_JSONL OUT_DIR

raw.jsonl is what bench/writes/run.sh writes: a "meta" line, then one line
per pgbench measurement (kind write, alone or with_writes; target cluster
or plain; script; consistent_reads on/off for the cluster's sums; tps of
the measured clients and, with_writes, of the concurrent writers).  Every
figure is the median over the runs of one configuration; the raw numbers
stay in raw.jsonl.
"""
import json
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

WRITES = [
    ("insert_local", "INSERT, row on the coordinator", "no other member"),
    ("insert_remote", "INSERT, row on member 1", "one phase on member 1"),
    ("update_1phase", "2 UPDATEs, rows on member 1", "one phase on member 1"),
    ("update_2phase", "2 UPDATEs, rows on members 0 and 1", "two phases, barrier"),
    ("update_3phase", "2 UPDATEs, rows on members 1 and 2", "two phases, barrier"),
]


def med(values):
    values = [v for v in values if v is not None]
    return (statistics.median(values), len(values)) if values else (float("nan"), 0)


def main():
    raw, out = sys.argv[1], sys.argv[2]
    meta = {}
    by = defaultdict(list)
    wby = defaultdict(list)
    with open(raw) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("kind") == "meta":
                meta = rec
                continue
            key = (rec["kind"], rec["target"], rec["script"], rec.get("consistent_reads", ""))
            by[key].append(rec["tps"])
            wby[key].append(rec.get("writer_tps"))

    lines = ["# Writes: one-phase and two-phase commit, and the read barrier", ""]
    lines.append(f"pgbench, {meta.get('clients')} clients, {meta.get('seconds')} s a "
                 f"measurement, median of {meta.get('runs')} runs interleaved in random order; "
                 f"{meta.get('accounts')} accounts; a local 3-member cluster and a plain server "
                 f"with the same settings (fsync and synchronous_commit off), all on the same "
                 f"{meta.get('cpus')} shared cores ({meta.get('date')}).  Every script enters "
                 "through member 0.  Made by `bash bench/writes/run.sh`.")
    lines += ["", "## Writes", "",
              "| script | commit | cluster tps | plain server tps | cluster / plain | / insert_remote |",
              "|---|---|---|---|---|---|"]
    plain_insert = med(by[("write", "plain", "insert_local", "")])[0]
    plain_update = med(by[("write", "plain", "update_2phase", "")])[0]
    one_phase = med(by[("write", "cluster", "update_1phase", "")])[0]
    remote_insert = med(by[("write", "cluster", "insert_remote", "")])[0]
    bars = []
    for script, what, commit in WRITES:
        tps, n = med(by[("write", "cluster", script, "")])
        plain = plain_insert if script.startswith("insert") else plain_update
        lines.append(f"| {script}: {what} | {commit} | {tps:.0f} (n={n}) | {plain:.0f} | "
                     f"{tps / plain:.2f} | {tps / remote_insert:.2f} |")
        bars.append((script, tps))
    lines += ["",
              f"Two-phase against one-phase for the same two UPDATEs: update_2phase / "
              f"update_1phase = {med(by[('write', 'cluster', 'update_2phase', '')])[0] / one_phase:.2f}, "
              f"update_3phase / update_1phase = "
              f"{med(by[('write', 'cluster', 'update_3phase', '')])[0] / one_phase:.2f} "
              "(the goal: two-phase costs at most 2x, that is a ratio of at least 0.5).",
              "", "## The read barrier", "",
              "| reads | consistent_reads | cluster query tps | writer tps (update_3phase via member 1) | plain server query tps | plain writer tps |",
              "|---|---|---|---|---|---|"]
    sums = []
    for kind in ("alone", "with_writes"):
        ptps = med(by[(kind, "plain", "sum", "")])[0]
        pw = med(wby[(kind, "plain", "sum", "")])[0]
        for mode in ("on", "off"):
            tps, n = med(by[(kind, "cluster", "sum", mode)])
            wtps = med(wby[(kind, "cluster", "sum", mode)])[0]
            lines.append(f"| SELECT sum(bal), {kind.replace('_', ' ')} | {mode} | {tps:.0f} (n={n}) | "
                         f"{'' if kind == 'alone' else f'{wtps:.0f}'} | {ptps:.0f} | "
                         f"{'' if kind == 'alone' else f'{pw:.0f}'} |")
            sums.append((f"{kind}\n{mode}", tps))
    on_alone = med(by[("alone", "cluster", "sum", "on")])[0]
    off_alone = med(by[("alone", "cluster", "sum", "off")])[0]
    on_w = med(by[("with_writes", "cluster", "sum", "on")])[0]
    off_w = med(by[("with_writes", "cluster", "sum", "off")])[0]
    lines += ["", f"Barrier cost on queries: on / off = {on_alone / off_alone:.2f} alone, "
              f"{on_w / off_w:.2f} while two-phase writers commit.  With it off, a sum may "
              "see a transfer on one member and not on the other (test/t/105_consistent_reads.pl).",
              ""]
    with open(f"{out}/report.md", "w") as f:
        f.write("\n".join(lines))

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.5))
    a1.bar([b[0] for b in bars] + ["plain\ninsert", "plain\nupdate"],
           [b[1] for b in bars] + [plain_insert, plain_update],
           color=["C0"] * len(bars) + ["C7", "C7"])
    a1.set_ylabel("transactions/s (median)")
    a1.set_title("writes through member 0")
    a1.tick_params(axis="x", labelrotation=30)
    a2.bar([s[0] for s in sums], [s[1] for s in sums], color=["C2", "C3", "C2", "C3"])
    a2.set_ylabel("queries/s (median)")
    a2.set_title("SELECT sum(bal): consistent_reads on/off")
    fig.tight_layout()
    fig.savefig(f"{out}/writes.png", dpi=100)


if __name__ == "__main__":
    main()
