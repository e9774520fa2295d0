"""bench/shuffle/report.py: report.md, shuffle.png and pool.png from raw.jsonl.

    python3 report.py RAW_JSONL OUT_DIR

raw.jsonl is what bench/shuffle/run.sh writes, one JSON object a line,
"kind" one of meta, warmup, shuffle, transport, fi_sendloop, mpi, copy,
gather, end.  Every figure of the report is a median over the runs of one
configuration (the count is shown); the raw numbers stay in raw.jsonl.

Throughput of one shuffle_selftest run (all participants at once):
  rows received/s  sum of rows_received over the participants / the
                   slowest participant's seconds (rows that crossed between
                   members: without the share a member keeps)
  input rows/s     rows of the input table (all members' shares) / the same
                   seconds: every row repartitioned (or broadcast) once,
                   the local share included, as the baselines count
  MB/s per participant  sum of bytes_sent / seconds / n
"""
import json
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SE_DESIGNS = [("sesq_sr", "udp"), ("semq_sr", "tcp"), ("semq_rd", "tcp"), ("semq_wr", "tcp"),
              ("semq_sr", "shm"), ("semq_rd", "shm"), ("semq_wr", "shm")]
# the same on rdma_exchange.transport_endpoints endpoint sets (n = 3 only)
ME_DESIGNS = [("me" + des[2:], prov) for des, prov in SE_DESIGNS]
DESIGNS = SE_DESIGNS + ME_DESIGNS
ROWKINDS = [("n16", "16 B rows (k bigint, v bigint)"), ("li", "lineitem rows (16 TPC-H columns)")]
ROWSHORT = {"n16": "16 B", "li": "lineitem"}
MODES = ["repartition", "broadcast"]
NS = [2, 3]
NAN = float("nan")


def med(xs):
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else NAN


def fmt_rows(x):
    if x != x:
        return "-"
    return f"{x / 1e6:.2f} M" if x >= 1e6 else f"{x / 1e3:.0f} k"


def fmt_mb(x):
    return "-" if x != x else f"{x:.0f}" if x >= 100 else f"{x:.1f}"


def ratio(a, b):
    return a / b if b and b == b and a == a else NAN


def verdict(ok):
    if ok is None:
        return "not measured"
    return "reached" if ok else "NOT reached"


# ---------------------------------------------------------------- reading

def shuffle_point(rec):
    ms = rec["members"]
    secs = max(m["seconds"] for m in ms)
    n = rec["n"]
    recv = sum(m["rows_received"] for m in ms)
    return {
        "run": rec["run"],
        "seconds": secs,
        "recv_rows_s": recv / secs,
        "input_rows_s": rec["rows_total"] / secs,
        "mb_s_pp": sum(m["bytes_sent"] for m in ms) / secs / n / 1e6,
        "peak": sum(m["peak_buffers"] for m in ms),
        "rows_sent": sum(m["rows_sent"] for m in ms),
        "bytes_sent": sum(m["bytes_sent"] for m in ms),
    }


def summarize(points):
    keys = ["seconds", "recv_rows_s", "input_rows_s", "mb_s_pp", "peak"]
    s = {k: med([p[k] for p in points]) for k in keys}
    s["runs"] = len(points)
    s["points"] = points
    return s


def load(path):
    recs = [json.loads(line) for line in open(path) if line.strip()]
    meta = next((r for r in recs if r["kind"] == "meta"), {})
    end = next((r for r in recs if r["kind"] == "end"), {})
    errors = [r for r in recs if "error" in r]

    shuffle = defaultdict(list)      # (design, provider, n, row, mode, depth) -> points
    sampled = defaultdict(list)      # (design, depth) -> records with samples
    for r in recs:
        if r["kind"] != "shuffle" or "error" in r:
            continue
        key = (r["design"], r["provider"], r["n"], r["row"], r["mode"], r["depth"])
        if r.get("sampled") == 1:
            sampled[(r["design"], r["depth"])].append(r)
            continue
        shuffle[key].append(shuffle_point(r))
    shuffle = {k: summarize(v) for k, v in shuffle.items()}

    # (design, provider, n) -> per-run MB/s per member, one session a member;
    # (design, provider, n, sessions) -> the same with several at once, a
    # member's MB/s being all its sessions' bytes / its slowest session
    transport = defaultdict(list)
    transport_multi = defaultdict(list)
    transport_bad = defaultdict(int)
    for r in recs:
        if r["kind"] == "transport" and "error" not in r:
            ms = r["members"]
            k = r.get("sessions", 1)
            per_member = defaultdict(lambda: [0, 0.0])
            for m in ms:
                per_member[m["member"]][0] += m["bytes"]
                per_member[m["member"]][1] = max(per_member[m["member"]][1], m["seconds"])
            mbs = statistics.mean(b / sec / 1e6 for b, sec in per_member.values())
            if k == 1:
                transport[(r["design"], r["provider"], r["n"])].append(mbs)
            else:
                transport_multi[(r["design"], r["provider"], r["n"], k)].append(mbs)
            transport_bad[(r["design"], r["provider"], r["n"])] += sum(m["errors"] for m in ms)

    fi = defaultdict(list)           # (provider, n) -> per-run MB/s per rank
    fi_lost = defaultdict(int)
    fi_msg = {}
    for r in recs:
        if r["kind"] == "fi_sendloop" and "error" not in r:
            fi[(r["provider"], r["n"])].append(statistics.mean(x["mb_per_s_received"] for x in r["ranks"]))
            fi_lost[(r["provider"], r["n"])] += sum(x.get("lost", 0) for x in r["ranks"])
            fi_msg[r["provider"]] = r["ranks"][0]["msg_size"]

    mpi = defaultdict(list)          # (btl, n, row) -> results
    for r in recs:
        if r["kind"] == "mpi" and "error" not in r and r.get("result"):
            mpi[(r["btl"], r["n"], r["row"])].append(r["result"])

    copy = defaultdict(list)         # (n, row) -> rows/s of every timed COPY run
    for r in recs:
        if r["kind"] == "copy" and "error" not in r:
            copy[(r["n"], r["row"])].extend(x["rows_per_s"] for x in r["results"] if "rows_per_s" in x)

    gather = defaultdict(list)       # (row, leader) -> rows/s
    gather_workers = defaultdict(list)
    for r in recs:
        if r["kind"] == "gather" and "error" not in r and r.get("plan"):
            p = r["plan"][0]
            gather[(r["row"], r["leader"])].append(r["rows_total"] / p["Execution Time"] * 1000)
            gather_workers[(r["row"], r["leader"])].append(p["Plan"].get("Workers Launched", 0))

    return {"meta": meta, "end": end, "errors": errors, "shuffle": shuffle, "sampled": sampled,
            "transport": {k: (med(v), len(v)) for k, v in transport.items()},
            "transport_multi": {k: (med(v), len(v)) for k, v in transport_multi.items()},
            "transport_bad": transport_bad,
            "fi": {k: (med(v), len(v)) for k, v in fi.items()}, "fi_lost": fi_lost, "fi_msg": fi_msg,
            "mpi": {k: (med([x["rows_per_s"] for x in v]), med([x["mb_per_s"] for x in v]), len(v),
                        v[0]["row_bytes"]) for k, v in mpi.items()},
            "copy": {k: (med(v), len(v)) for k, v in copy.items()},
            "gather": {k: (med(v), len(v)) for k, v in gather.items()},
            "gather_workers": gather_workers}


# ---------------------------------------------------------------- report

def row_width(d, row):
    """Bytes a row on the wire (MinimalTuple framing), from the repartitions."""
    sent = bytes_ = 0
    for k, s in d["shuffle"].items():
        if k[3] == row and k[4] == "repartition":
            for p in s["points"]:
                sent += p["rows_sent"]
                bytes_ += p["bytes_sent"]
    return bytes_ / sent if sent else NAN


def best_design(d, row, n, providers):
    best = None
    for des, prov in DESIGNS:
        if prov not in providers:
            continue
        s = d["shuffle"].get((des, prov, n, row, "repartition", 0))
        if s and (best is None or s["input_rows_s"] > best[2]["input_rows_s"]):
            best = (des, prov, s)
    return best


def goals(d):
    out = []
    # (1) transport vs raw provider bandwidth, n = 3
    rows, oks = [], []
    for des, prov in DESIGNS:
        t = d["transport"].get((des, prov, 3))
        f = d["fi"].get((prov, 3))
        if not t or not f:
            rows.append(f"{des} on {prov}: not measured")
            continue
        q = ratio(t[0], f[0])
        oks.append(q >= 0.5)
        rows.append(f"{des}/{prov} {t[0]:.0f} of {f[0]:.0f} MB/s = {q:.0%}")
    ok1 = all(oks) if oks and len(oks) == len(DESIGNS) else (False if oks and not all(oks) else None)
    out.append(("1. every design reaches >= 50% of its provider's raw bandwidth "
                "(transport_selftest MB/s per member vs fi_sendloop MB/s per rank, 64 KiB messages, n = 3)",
                "; ".join(rows), verdict(ok1)))

    # (2) best design vs Gather and COPY, lineitem, n = 3
    b = best_design(d, "li", 3, ("udp", "tcp", "shm"))
    g = d["gather"].get(("li", "on"))
    c = d["copy"].get((3, "li"))
    if b:
        v = b[2]["input_rows_s"]
        parts = [f"best {b[0]}/{b[1]}: {fmt_rows(v)} rows/s"]
        ok2 = []
        if g:
            parts.append(f"Gather {fmt_rows(g[0])} rows/s (x{ratio(v, g[0]):.2f}, needs >= 1)")
            ok2.append(v >= g[0])
        if c:
            parts.append(f"COPY {fmt_rows(c[0])} rows/s (x{ratio(v, c[0]):.2f}, needs >= 3)")
            ok2.append(v >= 3 * c[0])
        detail = "; ".join(parts)
        if g and c:
            res = verdict(all(ok2))
            if not all(ok2) and any(ok2):
                res += (" (" + ("Gather: reached" if ok2[0] else "Gather: NOT reached") + ", "
                        + ("COPY: reached" if ok2[1] else "COPY: NOT reached") + ")")
        else:
            res = verdict(None)
    else:
        detail, res = "no lineitem repartition measured", verdict(None)
    out.append(("2. the best design moves lineitem rows at least as fast as PostgreSQL's Gather "
                "and >= 3x faster than the COPY repartition (n = 3, input rows/s)", detail, res))

    # (3) best design vs MPI_Alltoallv over the same kind of link, n = 3
    parts, oks = [], []
    for link, providers, btl in (("network (udp/tcp)", ("udp", "tcp"), "tcp"), ("shared memory", ("shm",), "vader")):
        for row in ("n16", "li"):
            b = best_design(d, row, 3, providers)
            m = d["mpi"].get((btl, 3, row))
            if not b or not m:
                parts.append(f"{link} {ROWSHORT[row]}: not measured")
                continue
            q = ratio(b[2]["input_rows_s"], m[0])
            oks.append(q >= 1)
            parts.append(f"{ROWSHORT[row]} {b[0]}/{b[1]} {fmt_rows(b[2]['input_rows_s'])} vs btl {btl} "
                         f"{fmt_rows(m[0])} rows/s (x{q:.2f})")
    ok3 = all(oks) if len(oks) == 4 else (False if oks and not all(oks) else None)
    out.append(("3. the best design is at least as fast as MPI_Alltoallv over the same kind of link "
                "(tcp/udp vs btl tcp, shm vs vader; same row width, n = 3, input rows/s)",
                "; ".join(parts), verdict(ok3)))

    # (4) adaptive pool vs the best fixed depth: over every depth measured,
    # and over the depths 2-16 only
    parts, oks, oks16 = [], [], []
    for des, prov in (("semq_sr", "tcp"), ("sesq_sr", "udp")):
        a = d["shuffle"].get((des, prov, 3, "li", "repartition", 0))
        fixed = {k[5]: s for k, s in d["shuffle"].items()
                 if k[:5] == (des, prov, 3, "li", "repartition") and k[5] > 0}
        if not a or not fixed:
            parts.append(f"{des}/{prov}: not measured")
            continue
        text = []
        for sel, acc in ((fixed, oks), ({k: v for k, v in fixed.items() if k <= 16}, oks16)):
            if not sel:
                continue
            bd = max(sel, key=lambda k: sel[k]["input_rows_s"])
            bf = sel[bd]
            # a fixed depth holds its buffers for every stream (2 out and 2
            # in per member) whether the traffic fills them or not
            bf_bufs = max(bf["peak"], bd * 4 * 3)
            fast = a["input_rows_s"] >= 0.95 * bf["input_rows_s"]
            fewer = a["peak"] < bf_bufs
            acc.append(fast and fewer)
            text.append(f"{'best of depths 2-16' if sel is not fixed else 'best fixed depth'}: {bd}, "
                        f"{fmt_rows(bf['input_rows_s'])} rows/s with {bf_bufs:.0f} "
                        f"(adaptive {ratio(a['input_rows_s'], bf['input_rows_s']):.0%} of it, "
                        f"{'fewer' if fewer else 'not fewer'} buffers)")
        parts.append(f"{des}/{prov}: adaptive {fmt_rows(a['input_rows_s'])} rows/s with {a['peak']:.0f} "
                     f"buffers at peak; " + "; ".join(text))
    ok4 = all(oks) if len(oks) == 2 else (False if oks and not all(oks) else None)
    ok16 = all(oks16) if len(oks16) == 2 else (False if oks16 and not all(oks16) else None)
    res = verdict(ok4)
    if ok16 != ok4:
        res += f" (over depths 2-16 only: {verdict(ok16)})"
    out.append(("4. the adaptive pool reaches the throughput of the best fixed depth (within 5%) with "
                "fewer buffers (adaptive: the most buffers its streams held at once, peak_buffers of "
                "shuffle_selftest summed over the 3 members; fixed depth d: d buffers for each of the "
                "4 streams of every member, 12 d, or its peak if larger; 3-member lineitem repartition; "
                "depths 2-64 measured)", "; ".join(parts), res))
    return out


def write_report(d, out):
    meta = d["meta"]
    nruns = meta.get("runs", "?")
    L = []
    L.append("# Shuffle benchmark")
    L.append("")
    L.append(f"Command: `{meta.get('command', 'bash bench/shuffle/run.sh')}` "
             f"({meta.get('rows', '?'):,} rows, {nruns} runs; took "
             f"{d['end'].get('seconds', 0) / 60:.1f} min; {meta.get('date', '')}, commit {meta.get('git', '?')}).")
    L.append("")
    L.append(f"Machine: {meta.get('nproc', '?')} cores ({meta.get('cpu', '?')}), kernel {meta.get('kernel', '?')}, "
             f"{meta.get('libfabric', '?')}, {meta.get('postgres', '?')}, "
             f"{meta.get('mpi') or 'Open MPI: not installed'}.  All members and baselines share this machine "
             f"and talk over 127.0.0.1 (no RDMA device).")
    L.append("")
    L.append("## What was measured")
    L.append("")
    bc = meta.get("bcast_rows", "?")
    L.append(f"- **rdma_exchange**: `rdma_exchange.shuffle_selftest()` called at the same moment on each of the "
             f"n participants (n = 2: members 0 and 1 of a 3-member cluster; n = 3), each reading its local share "
             f"of a plain table ({meta.get('rows', 0):,} rows in all for repartition, {bc:,} for broadcast, "
             f"first column a distinct bigint) and repartitioning it by hash of the first column (the share for "
             f"itself stays) or broadcasting it to every other participant.  Designs: sesq_sr (datagrams, udp "
             f"provider), semq_sr / semq_rd / semq_wr (send-receive, RDMA read, RDMA write with immediate) over "
             f"the tcp provider and over the shm provider (two clusters, `rdma_exchange.reliable_provider`).  "
             f"Adaptive buffer pool unless a depth is given.  Lineitem rows are {meta.get('li_width', '?')} bytes "
             f"on the wire, 16 B rows {row_width(d, 'n16'):.0f} (MinimalTuple framing).")
    L.append("- **raw libfabric** (`baselines/fi_sendloop.c`): all-to-all between n processes, 64 KiB messages "
             "(udp clamped to the provider's 1472 B), next to `rdma_exchange.transport_selftest()`: the "
             "transport alone (no tuples), all-to-all, 64 KiB messages (1408 B payloads for sesq_sr).")
    L.append(f"- **MPI_Alltoallv** (`baselines/mpi_alltoallv.c`, Open MPI, pml ob1, btl self,tcp or self,vader): "
             f"n ranks, {meta.get('rows', 0):,} rows in all of 16 B or {meta.get('li_width', '?')} B "
             f"(the lineitem width above), packed by hash and exchanged; each call reports the median of 5 "
             f"iterations.")
    L.append("- **COPY repartition** (`baselines/copy_repartition.sh`): n plain PostgreSQL servers, every pair "
             "piped `COPY (SELECT ... WHERE hash = j) TO STDOUT | COPY dst FROM STDIN` at once (3 timed runs a "
             "call; the same rows, from `rows.sh`).")
    L.append("- **Gather**: member 0, a local table of all rows, `max_parallel_workers_per_gather = 2`, "
             "`parallel_setup_cost = parallel_tuple_cost = min_parallel_table_scan_size = 0`, "
             "`EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) SELECT * FROM t`: rows / execution time.  "
             "Also with `parallel_leader_participation = off` (every row crosses from a worker to the leader).")
    L.append("")
    L.append("All kinds are interleaved in a random order within each run; figures are medians over the runs "
             "(count in the `runs` column).  *input rows/s* = rows of the input table / slowest participant's "
             "seconds (every row once, the local share included, as the baselines count); *received rows/s* = "
             "rows that crossed between members / the same seconds; *MB/s per participant* = bytes sent / "
             "seconds / n.  Timings on a shared 2-core machine are noisy; the members, the baselines' processes "
             "and the sampling session all share the 2 cores.")
    L.append("")

    L.append("## Goals")
    L.append("")
    L.append("| goal | measured | verdict |")
    L.append("|---|---|---|")
    for g, m, v in goals(d):
        L.append(f"| {g} | {m} | **{v}** |")
    L.append("")

    for row, title in ROWKINDS:
        L.append(f"## {title}")
        L.append("")
        L.append("| n | mode | design | provider | input rows/s | received rows/s | received rows/s per participant "
                 "| MB/s per participant | peak buffers (all members) | runs |")
        L.append("|---|---|---|---|---|---|---|---|---|---|")
        for n in NS:
            for mode in MODES:
                for des, prov in DESIGNS if n == 3 else SE_DESIGNS:
                    s = d["shuffle"].get((des, prov, n, row, mode, 0))
                    if not s:
                        L.append(f"| {n} | {mode} | {des} | {prov} | failed / not run | | | | | 0 |")
                        continue
                    L.append(f"| {n} | {mode} | {des} | {prov} | {fmt_rows(s['input_rows_s'])} | "
                             f"{fmt_rows(s['recv_rows_s'])} | {fmt_rows(s['recv_rows_s'] / n)} | "
                             f"{fmt_mb(s['mb_s_pp'])} | {s['peak']:.0f} | {s['runs']} |")
                if mode == "repartition":
                    w = row_width(d, row)
                    for btl in ("tcp", "vader"):
                        m = d["mpi"].get((btl, n, row))
                        if m:
                            L.append(f"| {n} | repartition | *baseline: MPI_Alltoallv* | btl {btl} | {fmt_rows(m[0])} | "
                                     f"{fmt_rows(m[0] * (n - 1) / n)} (est.) | {fmt_rows(m[0] * (n - 1) / n / n)} (est.) | "
                                     f"{fmt_mb(m[1] / n)} ({m[3]} B rows) | - | {m[2]} |")
                    c = d["copy"].get((n, row))
                    if c:
                        L.append(f"| {n} | repartition | *baseline: COPY repartition* | libpq/TCP | {fmt_rows(c[0])} | "
                                 f"{fmt_rows(c[0] * (n - 1) / n)} (est.) | {fmt_rows(c[0] * (n - 1) / n / n)} (est.) | "
                                 f"{fmt_mb(c[0] * w / n / 1e6)} (est.) | - | {c[1]} |")
        for leader, what in (("on", "leader scans too"), ("off", "workers only")):
            g = d["gather"].get((row, leader))
            if g:
                w = row_width(d, row)
                L.append(f"| 1 server | - | *baseline: PostgreSQL Gather* ({what}) | shm_mq | {fmt_rows(g[0])} | - | - | "
                         f"{fmt_mb(g[0] * w / 1e6)} (est.) | - | {g[1]} |")
        L.append("")
        L.append("(est.): the baselines count every row; the share that crosses between members is (n-1)/n of it "
                 "under uniform hashing, and MB/s use this row kind's width on the wire.")
        L.append("")

    L.append("## Transport alone vs raw libfabric (64 KiB messages, all-to-all)")
    L.append("")
    L.append("| n | provider | design | transport_selftest MB/s per member | fi_sendloop MB/s per rank | share | "
             "runs | transport errors | fi_sendloop lost |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for n in NS:
        for des, prov in DESIGNS if n == 3 else SE_DESIGNS:
            t = d["transport"].get((des, prov, n))
            f = d["fi"].get((prov, n))
            L.append(f"| {n} | {prov} | {des} | {fmt_mb(t[0]) if t else '-'} | {fmt_mb(f[0]) if f else '-'} | "
                     f"{ratio(t[0], f[0]):.0%} | {t[1] if t else 0}/{f[1] if f else 0} | "
                     f"{d['transport_bad'].get((des, prov, n), 0)} | {d['fi_lost'].get((prov, n), 0)} |"
                     if t and f else
                     f"| {n} | {prov} | {des} | {fmt_mb(t[0]) if t else '-'} | {fmt_mb(f[0]) if f else '-'} | - | "
                     f"{t[1] if t else 0}/{f[1] if f else 0} | - | - |")
    L.append("")
    L.append(f"fi_sendloop message sizes: {', '.join(f'{p} {s} B' for p, s in sorted(d['fi_msg'].items()))}.  "
             "udp lost = datagrams the kernel dropped (fi_sendloop does not retransmit; sesq_sr does).")
    L.append("")

    L.append("## Single and multiple endpoints (SE, ME)")
    L.append("")
    L.append("The ME designs send through one of `rdma_exchange.transport_endpoints` (2) endpoint sets of the "
             "transport worker, dealt to the backends' ports in turn; the SE designs through set 0.  "
             "transport_selftest all-to-all, 64 KiB messages, 3 members, with one and with two backends a "
             "member at once (each its own query); MB/s per member, all its backends together.")
    L.append("")
    L.append("| provider | design | 1 backend a member | 2 backends a member | runs |")
    L.append("|---|---|---|---|---|")
    for des, prov in DESIGNS:
        one = d["transport"].get((des, prov, 3))
        two = d["transport_multi"].get((des, prov, 3, 2))
        if not one and not two:
            continue
        L.append(f"| {prov} | {des} | {fmt_mb(one[0]) if one else '-'} | {fmt_mb(two[0]) if two else '-'} | "
                 f"{one[1] if one else 0}/{two[1] if two else 0} |")
    L.append("")

    L.append("## Buffer pool: adaptive vs fixed depth (3 members, lineitem repartition)")
    L.append("")
    L.append("| design | provider | depth | input rows/s | MB/s per participant | peak buffers (all members) | "
             "max in use on member 0 (sampled) | runs |")
    L.append("|---|---|---|---|---|---|---|---|")
    for des, prov in (("semq_sr", "tcp"), ("sesq_sr", "udp")):
        depths = sorted(k[5] for k in d["shuffle"] if k[:5] == (des, prov, 3, "li", "repartition"))
        for depth in depths:
            s = d["shuffle"][(des, prov, 3, "li", "repartition", depth)]
            samp = d["sampled"].get((des, depth), [])
            mx = med([max((x[1] for x in r.get("samples") or []), default=NAN) for r in samp])
            L.append(f"| {des} | {prov} | {'adaptive' if depth == 0 else depth} | {fmt_rows(s['input_rows_s'])} | "
                     f"{fmt_mb(s['mb_s_pp'])} | {s['peak']:.0f} | {'-' if mx != mx else f'{mx:.0f}'} | {s['runs']} |")
    L.append("")
    for des, prov in (("semq_sr", "tcp"), ("sesq_sr", "udp")):
        a = d["shuffle"].get((des, prov, 3, "li", "repartition", 0))
        if a:
            L.append(f"Adaptive {des}: {a['peak'] / 12:.1f} buffers per stream on average at peak (median peak "
                     f"{a['peak']:.0f} summed over 3 members x 4 streams).  ")
    L.append("")
    L.append("Fixed depth N: credit window N and N buffers reserved per stream (`SET rdma_exchange.buffer_depth`), "
             "i.e. 4N per member at n = 3 (2 streams out, 2 in) whether used or not; peak buffers count the "
             "buffers the streams actually held.  "
             "Sampled: a session on member 0 read `rdma_exchange.buffer_pool_stats` every 5 ms during separate "
             "runs (large class for semq_sr, small for sesq_sr; in use = total - free - recv_posted); see pool.png.")
    L.append("")

    notes = meta.get("notes") or []
    if notes or d["errors"]:
        L.append("## Problems")
        L.append("")
        for x in notes:
            L.append(f"- {x.get('text', x) if isinstance(x, dict) else x}")
        for e in d["errors"][:30]:
            what = " ".join(str(e.get(k)) for k in ("kind", "cluster", "provider", "btl", "design", "n", "row",
                                                   "mode", "depth") if k in e)
            L.append(f"- run {e.get('run', '?')}, {what}: {e['error'][:300]}")
        if len(d["errors"]) > 30:
            L.append(f"- ... and {len(d['errors']) - 30} more failed measurements (raw.jsonl)")
        L.append("")

    L.append("## Raw numbers")
    L.append("")
    L.append("Input rows/s of every run, per configuration (all raw figures: raw.jsonl):")
    L.append("")
    for key in sorted(d["shuffle"], key=lambda k: (k[3], k[2], k[4], k[0], k[1], k[5])):
        des, prov, n, row, mode, depth = key
        pts = sorted(d["shuffle"][key]["points"], key=lambda p: p["run"])
        L.append(f"- {ROWSHORT[row]} n={n} {mode} {des}/{prov}{'' if depth == 0 else f' depth {depth}'}: "
                 + ", ".join(fmt_rows(p["input_rows_s"]) for p in pts))
    L.append("")
    L.append("Plots: shuffle.png (input rows/s per design, baselines as marks), pool.png (buffers in use over time).")
    open(f"{out}/report.md", "w").write("\n".join(L) + "\n")


# ---------------------------------------------------------------- plots

COLORS = {("sesq_sr", "udp"): "#7f7f7f", ("semq_sr", "tcp"): "#1f4e79", ("semq_rd", "tcp"): "#2e75b6",
          ("semq_wr", "tcp"): "#9dc3e6", ("semq_sr", "shm"): "#7b3f00", ("semq_rd", "shm"): "#c55a11",
          ("semq_wr", "shm"): "#f4b183"}
# an ME design has its SE design's colour, hatched
COLORS.update({me: COLORS[se] for me, se in zip(ME_DESIGNS, SE_DESIGNS)})


def plot_shuffle(d, out):
    groups = [(n, row, mode) for mode in MODES for row, _ in ROWKINDS for n in NS]
    fig, ax = plt.subplots(figsize=(13, 5.5))
    width = 0.8 / len(DESIGNS)
    marks = {"COPY": ("k", "x"), "MPI btl tcp": ("#d62728", "_"), "MPI btl vader": ("#9467bd", "_"),
             "Gather": ("#2ca02c", "_")}
    used = set()
    for gi, (n, row, mode) in enumerate(groups):
        for di, dp in enumerate(DESIGNS):
            s = d["shuffle"].get((dp[0], dp[1], n, row, mode, 0))
            if not s:
                continue
            x = gi + (di - (len(DESIGNS) - 1) / 2) * width
            ax.bar(x, s["input_rows_s"], width, color=COLORS[dp], edgecolor="white", linewidth=0.3,
                   hatch="///" if dp in ME_DESIGNS else None,
                   label=f"{dp[0]} / {dp[1]}" if gi == 0 or f"{dp}" not in used else None)
            used.add(f"{dp}")
        if mode != "repartition":
            continue
        refs = []
        c = d["copy"].get((n, row))
        if c:
            refs.append(("COPY", c[0]))
        for btl in ("tcp", "vader"):
            m = d["mpi"].get((btl, n, row))
            if m:
                refs.append((f"MPI btl {btl}", m[0]))
        g = d["gather"].get((row, "on"))
        if g:
            refs.append(("Gather", g[0]))
        for name, v in refs:
            color, _ = marks[name]
            ax.hlines(v, gi - 0.42, gi + 0.42, colors=color, linestyles="--" if name != "COPY" else ":",
                      linewidth=1.6, label=name if name not in used else None)
            used.add(name)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"n={n}\n{ROWSHORT[row]}\n{mode}" for n, row, mode in groups])
    ax.set_yscale("log")
    ax.set_ylabel("input rows/s (median; log scale)")
    meta = d["meta"]
    ax.set_title(f"shuffle_selftest: rows/s per design and provider, {meta.get('rows', 0):,} rows "
                 f"(broadcast {meta.get('bcast_rows', 0):,}), {meta.get('nproc', '?')} cores, medians of "
                 f"{meta.get('runs', '?')} runs; dashed/dotted: baselines")
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2, loc="upper right")
    fig.tight_layout()
    fig.savefig(f"{out}/shuffle.png", dpi=110)
    plt.close(fig)


def plot_pool(d, out):
    panels = [("semq_sr", "semq_sr over tcp (large buffers)"), ("sesq_sr", "sesq_sr over udp (small buffers)")]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, (des, title) in zip(axes, panels):
        longest = 0.0
        for depth, color, name in ((0, "#1f77b4", "adaptive"), (8, "#ff7f0e", "fixed depth 8")):
            recs = sorted(d["sampled"].get((des, depth), []), key=lambda r: r["run"])
            for i, r in enumerate(recs):
                smp = r.get("samples") or []
                if not smp:
                    continue
                t0 = r["start"]
                if i == 0:
                    longest = max(longest, max(m["seconds"] for m in r["members"]) * 1000)
                xs = [(x[0] - t0) * 1000 for x in smp]
                ax.plot(xs, [x[1] for x in smp], color=color, linewidth=1.2 if i == 0 else 0.7,
                        marker="." if i == 0 else None, markersize=3,
                        alpha=1.0 if i == 0 else 0.35,
                        label=f"{name}: in use" + (f" (run {r['run']}; fainter: other runs)" if len(recs) > 1 else "")
                        if i == 0 else None)
                if depth == 8 and i == 0:
                    ax.plot(xs, [x[2] for x in smp], color=color, linestyle=":", linewidth=1,
                            label="fixed depth 8: reserved")
        if longest > 0:
            ax.set_xlim(-0.1 * longest - 10, 1.3 * longest + 20)
        ax.set_title(title)
        ax.set_xlabel("ms since the shuffle's start (all sessions start then)")
        ax.set_ylabel("buffers of member 0")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("buffers in use during a 3-member lineitem repartition, sampled every 5 ms")
    fig.tight_layout()
    fig.savefig(f"{out}/pool.png", dpi=110)
    plt.close(fig)


def main():
    raw, out = sys.argv[1], sys.argv[2]
    d = load(raw)
    write_report(d, out)
    plot_shuffle(d, out)
    plot_pool(d, out)


if __name__ == "__main__":
    main()
