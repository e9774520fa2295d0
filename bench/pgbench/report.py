"""bench/pgbench/report.py: report.md and pgbench.png from raw.jsonl.

    python3 report.py RAW_JSONL OUT_DIR

raw.jsonl is what bench/pgbench/run.sh writes: a "meta" line, then one line
per measurement (run, instance plain or nN, script, tps, mean and 99th
percentile latency in ms).  Every figure is the median over the runs; the
raw numbers stay in raw.jsonl.  new_session's latency is 1/tps (pgbench's
per-transaction log leaves the connection out; its tps includes it).
The multi-client scripts are labelled with the client count of the meta
line (RX_PGB_CLIENTS; 4 in runs that predate it).  With two or more cluster
sizes the figure has a third panel: tps against the number of members, the
plain server as a dashed line.  Without matplotlib only report.md is
written.
"""
import json
import statistics
import sys
from collections import defaultdict

SCRIPTS = [
    ("point_1c", "point lookup by aid (-S), 1 client", "latency"),
    ("select_4c", "-S, {c} clients through member 0", "tps"),
    ("select_spread", "-S, {c} clients spread over the members", "tps"),
    ("simple_update", "-N (simple-update), {c} clients", "tps"),
    ("tpcb", "TPC-B-like, {c} clients", "tps"),
    ("minmax", "min(aid), max(aid)", "latency"),
    ("top10", "ORDER BY aid DESC LIMIT 10", "latency"),
    ("range100", "aid BETWEEN x AND x + 100", "latency"),
    ("in3", "aid IN (3 random keys)", "latency"),
    ("lookup20", "20 accounts looked up by a correlated subquery", "latency"),
    ("new_session", "point lookup, first statement of a new session", "latency"),
]


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(v, digits=3):
    return "-" if v is None else f"{v:.{digits}f}"


def main():
    raw, out = sys.argv[1], sys.argv[2]
    meta = {}
    by = defaultdict(lambda: defaultdict(list))
    instances = []
    with open(raw) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("kind") == "meta":
                meta = rec
                continue
            if rec["script"] == "new_session" and rec["tps"]:
                rec["mean_ms"] = 1000.0 / rec["tps"]
            key = (rec["instance"], rec["script"])
            for field in ("tps", "mean_ms", "p99_ms"):
                by[key][field].append(rec[field])
            if rec["instance"] not in instances:
                instances.append(rec["instance"])
    clusters = [i for i in instances if i != "plain"]
    clients = meta.get("clients", 4)
    scripts = [(s, label.format(c=clients), kind) for s, label, kind in SCRIPTS]
    sizes = sorted(int(c[1:]) for c in clusters)
    span = (f"{sizes[0]} to {sizes[-1]} members" if len(sizes) > 1 else
            f"{sizes[0]} member{'s' if sizes and sizes[0] > 1 else ''}" if sizes else "no cluster")
    if meta.get("cores"):
        cores = (f"Cores: {meta['cores']}; taskset on each postmaster, whose backends and "
                 "workers inherit it.  ")
    else:
        cores = ("The plain server and member 0 are pinned to core 0, member i to core i mod the "
                 "number of cores (taskset); pgbench is not pinned.  ")

    lines = [f"# Small queries: pgbench on a plain server and on {span}", ""]
    lines.append(
        f"pgbench tables at scale {meta.get('scale')} ({meta.get('scale', 0) * 100000} accounts; "
        "pgbench_accounts and pgbench_history hash-distributed on aid, branches and tellers "
        f"reference tables), {meta.get('seconds')} s a measurement, median of {meta.get('runs')} "
        f"run(s); {meta.get('nproc')} cores ({meta.get('cpu')}), {meta.get('date')}, "
        f"commit {meta.get('commit')}.  " + cores + "Made by `bash bench/pgbench/run.sh`.")
    lines += ["", "## Per script", ""]
    head = "| script | plain |" + "".join(f" {c} |" for c in clusters) + "".join(
        f" {c} / plain |" for c in clusters)
    lines += [head, "|---|---|" + "---|" * (2 * len(clusters))]
    for script, label, kind in scripts:
        if ("plain", script) not in by:
            continue
        field = "tps" if kind == "tps" else "mean_ms"
        base = med(by[("plain", script)][field])
        row = f"| {label} ({'tps' if kind == 'tps' else 'ms, mean'}) | {fmt(base)} |"
        ratios = ""
        for c in clusters:
            v = med(by[(c, script)][field])
            row += f" {fmt(v)} |"
            ratios += f" {fmt(v / base if v is not None and base else None, 2)} |"
        lines.append(row + ratios)
    lines += ["", "## 99th percentile latency (ms)", "",
              "| script | plain |" + "".join(f" {c} |" for c in clusters),
              "|---|---|" + "---|" * len(clusters)]
    for script, label, _ in scripts:
        if ("plain", script) not in by:
            continue
        lines.append(f"| {label} | {fmt(med(by[('plain', script)]['p99_ms']))} |" +
                     "".join(f" {fmt(med(by[(c, script)]['p99_ms']))} |" for c in clusters))
    lines += ["", "For tps the ratio is cluster / plain (higher is better); for latencies "
              "it is cluster / plain too (lower is better).", ""]
    with open(f"{out}/report.md", "w") as f:
        f.write("\n".join(lines))

    try:
        import matplotlib
    except ImportError:
        print("report.py: no matplotlib; wrote report.md only", file=sys.stderr)
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tps_scripts = [s for s in scripts if s[2] == "tps" and ("plain", s[0]) in by]
    lat_scripts = [s for s in scripts if s[2] == "latency" and ("plain", s[0]) in by]
    curve = len(sizes) > 1 and tps_scripts
    fig, axes = plt.subplots(1, 3 if curve else 2, figsize=(19 if curve else 13, 4.8))
    for ax, group, field, title in ((axes[0], tps_scripts, "tps", "throughput (tps)"),
                                    (axes[1], lat_scripts, "mean_ms", "latency (ms, log scale)")):
        if not group:
            ax.set_axis_off()
            continue
        width = 0.8 / len(instances)
        for k, inst in enumerate(instances):
            values = [med(by[(inst, s[0])][field]) or 0 for s in group]
            ax.bar([x + k * width for x in range(len(group))], values, width, label=inst)
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(group))])
        ax.set_xticklabels([s[0] for s in group], rotation=30, ha="right")
        ax.set_title(title)
        if field == "mean_ms":
            ax.set_yscale("log")
        ax.legend()
    if curve:
        ax = axes[2]
        for k, (script, label, _) in enumerate(tps_scripts):
            color = f"C{k}"
            ax.plot(sizes, [med(by[(f"n{n}", script)]["tps"]) or 0 for n in sizes], "o-",
                    color=color, label=label)
            base = med(by[("plain", script)]["tps"])
            if base:
                ax.axhline(base, color=color, linestyle="--", linewidth=1)
        ax.set_xticks(sizes)
        ax.set_xlabel("members (dashed: the plain server)")
        ax.set_ylim(bottom=0)
        ax.set_title("throughput against members (tps)")
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(f"{out}/pgbench.png", dpi=110)


if __name__ == "__main__":
    main()
