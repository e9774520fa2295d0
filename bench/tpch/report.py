"""bench/tpch/report.py: report.md and tpch.png from the raw.jsonl of
bench/tpch/run.sh.

    python3 bench/tpch/report.py RAW_JSONL OUT_DIR

run.sh calls it after its runs; run it again by hand to redo the report
from the same raw numbers.  raw.jsonl holds one "machine" line, one "load"
line per schema and one "query" line per run (layout, query, run, side
cluster or single, status ok/error/timeout/skipped, ms, cpu_s, bytes,
same).  The report has, per layout, a table of medians over the runs that
succeeded: wall time on the cluster and on the single server and their
ratio, CPU seconds of all server processes and their ratio, megabytes the
transport sent between the members, and whether the answers were the
same; then the geometric mean of the time ratios, the ratio of the total
CPU, the queries more than 3 times slower on the cluster, failures, the
load times and the machine.  tpch.png: the time ratio per query and
layout (log scale, a line at 1.0).
"""
import json
import math
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

LAYOUTS = {
    "a": "layout a (distributed: lineitem, orders by orderkey; part, partsupp by partkey; "
         "customer, supplier by their keys; nation, region reference tables)",
    "b": "layout b (lineitem, orders by orderkey; every other table a reference table)",
}


def med(xs):
    return statistics.median(xs) if xs else None


def summarize(runs):
    """Medians over the successful runs of one query on one side."""
    ok = [r for r in runs if r["status"] == "ok"]
    failed = [r for r in runs if r["status"] != "ok"]
    s = {
        "n": len(runs),
        "ok": len(ok),
        "ms": med([r["ms"] for r in ok if r["ms"] is not None]),
        "cpu": med([r["cpu_s"] for r in ok if r["cpu_s"] is not None]),
        "bytes": med([r["bytes"] for r in ok if r.get("bytes") is not None]),
        "status": "ok" if ok else (failed[0]["status"] if failed else "missing"),
        "error": next((r["error"] for r in failed if r["status"] in ("error", "timeout")), ""),
        "same": [r["same"] for r in runs if r.get("same") is not None],
    }
    return s


def fmt_ms(s):
    if s is None or s["ms"] is None:
        return "-" if s is None else s["status"]
    mark = "" if s["ok"] == s["n"] else f" ({s['ok']}/{s['n']} ok)"
    return f"{s['ms']:,.0f}{mark}" if s["ms"] >= 10 else f"{s['ms']:.1f}{mark}"


def fmt_cpu(s):
    if s is None or s["cpu"] is None:
        return "-"
    return f"{s['cpu']:.2f}"


def ratio(a, b):
    if a is None or b is None or b <= 0:
        return None
    return a / b


def fmt_ratio(x):
    return "-" if x is None else f"{x:.2f}"


def short_error(e):
    e = " ".join(e.split())
    return e[:200] + ("..." if len(e) > 200 else "")


def main():
    raw, out = sys.argv[1], sys.argv[2]
    recs = [json.loads(line) for line in open(raw) if line.strip()]
    machine = next((r for r in recs if r["kind"] == "machine"), {})
    loads = [r for r in recs if r["kind"] == "load"]
    qrecs = [r for r in recs if r["kind"] == "query"]
    sf = machine.get("sf", "?")
    nruns = machine.get("runs", "?")

    layouts = []
    for r in qrecs:
        if r["layout"] not in layouts:
            layouts.append(r["layout"])
    queries = sorted({r["query"] for r in qrecs})

    def runs_of(layout, query, side):
        return [r for r in qrecs if r["layout"] == layout and r["query"] == query and r["side"] == side]

    lines = [
        f"# TPC-H benchmark, scale factor {sf}",
        "",
        f"The 22 TPC-H queries on a 3-member rdma_exchange cluster and on one plain PostgreSQL "
        f"server with the same settings, all on one machine ({machine.get('nproc', '?')} cores, "
        f"shared by the 3 members and the single server).  {nruns} runs of each query on each side, "
        f"interleaved, each through a fresh connection; medians over the runs that succeeded.  "
        f"Time: psql's \\timing of the query, ms.  CPU: seconds of all server processes of the "
        f"instance during the run (for the cluster summed over its 3 members, the transport worker "
        f"included).  MB moved: megabytes the transport sent between the members (bytes_sent of "
        f"rdma_exchange.transport_stats(), headers, acknowledgements and retransmissions included).  "
        f"Same answer: rows sorted, numbers rounded to 2 decimals, as bench/tpch/check.sh compares.  "
        f"Ratios are cluster / single: below 1 the cluster is faster.  Timeout: "
        f"{machine.get('timeout_s', '?')} s per query.",
        "",
    ]

    chart = {}
    for layout in layouts:
        lines += [f"## {LAYOUTS.get(layout, 'layout ' + layout)}", "",
                  "| query | cluster ms | single ms | ratio | cluster CPU s | single CPU s | CPU ratio "
                  "| MB moved | same answer |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
        ratios, cpu_c, cpu_s, ms_c, ms_s = [], 0.0, 0.0, 0.0, 0.0
        slow, failures, different = [], [], []
        chart[layout] = {}
        for q in queries:
            cr, sr = runs_of(layout, q, "cluster"), runs_of(layout, q, "single")
            if not cr and not sr:
                continue
            c = summarize(cr) if cr else None
            s = summarize(sr) if sr else None
            rt = ratio(c and c["ms"], s and s["ms"])
            rc = ratio(c and c["cpu"], s and s["cpu"])
            mb = "-" if c is None or c["bytes"] is None else f"{c['bytes'] / 1e6:,.3f}"
            same = c["same"] if c else []
            if not same:
                verdict = "-"
            elif all(same):
                verdict = "yes"
            else:
                verdict = f"**NO** ({same.count(False)} of {len(same)} runs)"
                different.append(q)
            lines.append(f"| {q} | {fmt_ms(c)} | {fmt_ms(s)} | {fmt_ratio(rt)} | {fmt_cpu(c)} | "
                         f"{fmt_cpu(s)} | {fmt_ratio(rc)} | {mb} | {verdict} |")
            chart[layout][q] = rt if rt is not None else ("fail", c["status"] if c and c["ms"] is None else
                                                          (s["status"] if s else "missing"))
            if rt is not None:
                ratios.append(rt)
                ms_c += c["ms"]
                ms_s += s["ms"]
                if c["cpu"] is not None and s["cpu"] is not None:
                    cpu_c += c["cpu"]
                    cpu_s += s["cpu"]
                if rt > 3:
                    slow.append(f"{q} ({rt:.1f}x)")
            for side, x in (("cluster", c), ("single server", s)):
                if x is not None and x["ok"] < x["n"]:
                    failures.append(f"  - {q} on the {side}: {x['n'] - x['ok']} of {x['n']} runs "
                                    f"{x['status'] if x['ok'] == 0 else 'failed'}"
                                    + (f": `{short_error(x['error'])}`" if x["error"] else ""))
        lines.append("")
        if ratios:
            geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
            lines.append(f"- Geometric mean of the time ratios ({len(ratios)} queries that ran on both "
                         f"sides): **{geo:.2f}**")
            lines.append(f"- Total time, sum of the medians: cluster {ms_c / 1000:,.1f} s, single "
                         f"{ms_s / 1000:,.1f} s, ratio {ms_c / ms_s:.2f}")
            if cpu_s > 0:
                lines.append(f"- Total CPU, sum of the medians: cluster {cpu_c:,.1f} s, single "
                             f"{cpu_s:,.1f} s, ratio **{cpu_c / cpu_s:.2f}**")
        lines.append(f"- Queries more than 3 times slower on the cluster: {', '.join(slow) if slow else 'none'}")
        lines.append(f"- Different answers: {', '.join(different) if different else 'none'}"
                     + (f" (first difference in {layout}/qNN.diff.txt)" if different else ""))
        lines.append("- Failed or timed out:" + (" none" if not failures else ""))
        lines += failures
        lines.append("")

    lines += ["## Loading", "",
              "bench/tpch/load.sh: generation with rx_dbgen, COPY, VACUUM ANALYZE; the cluster's "
              "members each load a share in parallel, the single server loads with 2 COPY streams.",
              "",
              "| schema | server | layout | load.sh s | load + analyze s | lineitem s | lineitem rows | loaded |",
              "|---|---|---|---:|---:|---:|---:|---|"]
    for ld in loads:
        li = ld.get("tables", {}).get("lineitem", {})
        when = ld.get("loaded_at", "?") + (" (reused)" if ld.get("reused") else "")
        lt = ld.get("load_seconds")
        lines.append(f"| {ld['schema']} | {ld['target']} | {ld['layout']} | {ld.get('seconds', 0):.1f} | "
                     f"{'-' if lt is None else f'{lt:.1f}'} | {li.get('seconds', 0):.1f} | "
                     f"{li.get('rows', 0):,} | {when} |")
    mem = machine.get("mem_kb", 0) / 1024 / 1024
    lines += ["",
              "## Machine", "",
              f"- {machine.get('nproc', '?')} cores ({machine.get('cpu', '?')}), {mem:.1f} GB memory, "
              f"Linux {machine.get('kernel', '?')}",
              f"- {machine.get('pg_version', '?')}",
              f"- rdma_exchange {machine.get('extension', '?')}, transport {machine.get('transport', '?')}, "
              f"commit {machine.get('commit', '?')}",
              f"- settings of every server (test/cluster.sh): {machine.get('settings', '?')}",
              f"- date: {machine.get('date', '?')}",
              "",
              "Raw numbers: raw.jsonl; plans: <layout>/qNN.explain.txt (cluster, EXPLAIN ANALYZE "
              "VERBOSE) and <layout>/qNN_single.explain.txt (single server, EXPLAIN ANALYZE).",
              ""]
    open(f"{out}/report.md", "w").write("\n".join(lines))

    # chart: time ratio per query, one bar per layout
    fig, ax = plt.subplots(figsize=(max(8, len(queries) * 0.55), 4.5))
    width = 0.8 / max(1, len(layouts))
    colors = ["#3b6ea5", "#c28e0e", "#5a9e5a", "#999999"]
    vals = [v for layout in layouts for v in chart[layout].values() if isinstance(v, float)]
    lo = min(vals + [1.0]) / 1.5
    hi = max(vals + [1.0]) * 1.5
    for k, layout in enumerate(layouts):
        xs, ys, fails = [], [], []
        for i, q in enumerate(queries):
            v = chart[layout].get(q)
            x = i + (k - (len(layouts) - 1) / 2) * width
            if isinstance(v, float):
                xs.append(x)
                ys.append(v)
            elif v is not None:
                fails.append((x, v[1]))
        ax.bar(xs, ys, width, label=f"layout {layout}", color=colors[k % len(colors)])
        for x, what in fails:
            ax.text(x, lo * 1.1, what, rotation=90, ha="center", va="bottom", fontsize=7, color="#b00000")
    ax.axhline(1.0, color="black", linewidth=1)
    ax.set_yscale("log")
    ax.set_ylim(lo, hi)
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(range(len(queries)))
    ax.set_xticklabels([q.upper() for q in queries], rotation=0, fontsize=8)
    ax.set_ylabel("wall time ratio cluster / single (median)")
    ax.set_title(f"TPC-H SF {sf}: 3-member cluster vs one server, same machine "
                 f"({machine.get('nproc', '?')} cores); below 1: cluster faster")
    ax.legend()
    fig.tight_layout()
    fig.savefig(f"{out}/tpch.png", dpi=100)


if __name__ == "__main__":
    main()
