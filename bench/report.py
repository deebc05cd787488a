"""Turns a bench/run.sh results directory into table.md and chart.png (gemgate benchmarks)."""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ORDER = ["stdio", "stdio-shared", "echofloor", "relayfloor", "gemgate-auth", "gemgate-noauth", "gemgate-user", "gemgate-sessionless", "gemgate-haproxy",
         "supergateway", "toolhive"]
NAMES = {
    "stdio": "(a) worker over stdio (floor)",
    "stdio-shared": "(k) one worker over stdio, shared by all sessions (worker ceiling)",
    "echofloor": "(b) Go HTTP echo (HTTP floor)",
    "relayfloor": "(j) Go HTTP-to-stdio relay, one shared worker (relay floor)",
    "gemgate-auth": "(c) gemgate, JWT on",
    "gemgate-noauth": "(d) gemgate, auth none",
    "gemgate-user": "(g) gemgate, JWT on, one worker per user",
    "gemgate-sessionless": "(h) gemgate as (g), 2026-07-28 sessionless requests",
    "gemgate-haproxy": "(i) gemgate as (g), behind HAProxy 2.6",
    "supergateway": "(e) supergateway 4.0.0",
    "toolhive": "(f) ToolHive streamable proxy",
}
PEERS = ["supergateway", "toolhive"]


def fmt(v, nd=0):
    if v is None or v == "":
        return "–"
    if isinstance(v, float):
        return f"{v:,.{nd}f}"
    return str(v)


def median(vals):
    vals = sorted(vals)
    h = len(vals) // 2
    return vals[h] if len(vals) % 2 else (vals[h - 1] + vals[h]) / 2


def medians(ds):
    """Each key's median over dicts with the same keys (a latency summary per round)."""
    return {k: median([d[k] for d in ds]) for k in ds[0]}


def median_row(rs):
    """One point of the throughput part from its rounds: each figure's median over the rounds
    that ran, with the spread of the throughput and the load averages the rounds met."""
    ok = [r for r in rs if "throughput" in r]
    if not ok:
        return rs[-1]
    m = dict(ok[0])
    m["throughput"] = median([r["throughput"] for r in ok])
    m["latency_us"] = medians([r["latency_us"] for r in ok])
    for r in ok:
        n = r.get("total_calls")
        if n and r.get("loadgen_measured_cpu_s") is not None and r.get("machine_busy_cpu_s") is not None:
            r["loadgen_cpu_us_per_call"] = r["loadgen_measured_cpu_s"] * 1e6 / n
            r["machine_busy_us_per_call"] = r["machine_busy_cpu_s"] * 1e6 / n
            r["machine_busy_share"] = r["machine_busy_cpu_s"] / (r["elapsed_s"] * r["machine_cpus"])
    for k in ("gateway_cpu_us_per_call", "gateway_peak_rss_kib", "loadgen_cpu_s", "workers_cpu_us_per_call",
              "loadgen_cpu_us_per_call", "machine_busy_us_per_call", "machine_busy_share"):
        if all(r.get(k) is not None for r in ok):
            m[k] = median([r[k] for r in ok])
    m["tp_min"], m["tp_max"] = min(r["throughput"] for r in ok), max(r["throughput"] for r in ok)
    m["rounds"], m["failed_rounds"] = len(ok), len(rs) - len(ok)
    loads = sorted(float(r["load"]) for r in ok if r.get("load"))
    m["load"] = (f"{loads[0]:.2f}" if loads[0] == loads[-1] else f"{loads[0]:.2f}–{loads[-1]:.2f}") if loads else ""
    return m


def median_idle(rs):
    """One point of the idle part from its rounds: the median memory per session (of an even
    count, the mean of the middle two), on the row of the round at the middle, with the
    rounds' lowest and highest. A round that opened fewer sessions than asked (an
    error) is ranked only when no round opened them all, as with a worker per session at the
    descriptor limit."""
    ok = [r for r in rs if r.get("per_session_kib") is not None]
    if not ok:
        return rs[-1]
    whole = [r for r in ok if not r.get("error")]
    ranked = sorted(whole or ok, key=lambda r: r["per_session_kib"])
    m = dict(ranked[len(ranked) // 2])
    m["per_session_kib"] = median([r["per_session_kib"] for r in ranked])
    m["kib_min"], m["kib_max"] = ranked[0]["per_session_kib"], ranked[-1]["per_session_kib"]
    m["rounds"], m["failed_rounds"] = len(ranked), len(rs) - len(ranked)
    return m


def median_open(rs):
    """One scenario of the session-open part from its rounds: each latency figure's median
    over the rounds that ran, with the lowest and highest p50."""
    ok = [r for r in rs if "open_latency_us" in r]
    if not ok:
        return rs[-1]
    m = dict(ok[0])
    m["open_latency_us"] = medians([r["open_latency_us"] for r in ok])
    p50s = [r["open_latency_us"]["P50"] for r in ok]
    m["p50_min"], m["p50_max"] = min(p50s), max(p50s)
    m["rounds"], m["failed_rounds"] = len(ok), len(rs) - len(ok)
    m["opens"] = sum(r["opens"] for r in ok) // len(ok)
    return m


def p50_spread(r):
    """The rounds' range of an open p50, in ms, for a table cell."""
    if r.get("rounds", 1) < 2:
        return ""
    return f" ({r['p50_min'] / 1e3:.2f}–{r['p50_max'] / 1e3:.2f})"


def spread(r):
    """The rounds' range of an idle point's memory per session, for a table cell."""
    if r.get("rounds", 1) < 2:
        return ""
    return f" ({r['kib_min']:.1f}–{r['kib_max']:.1f})"


def failed_note(r):
    """The rounds of an idle point that failed or were set aside, for its note."""
    n = r.get("failed_rounds", 0)
    return f"{'; ' if r.get('error') else ''}{n} round(s) failed or opened fewer sessions" if n else ""


def main(out):
    out = Path(out)
    rows = [json.loads(l) for l in (out / "results.jsonl").read_text().splitlines() if l.strip()]
    for r in rows:  # (h)'s label in results recorded before the 2026-07-28 era was named sessionless
        if r.get("label") == "gemgate-modern":
            r["label"] = "gemgate-sessionless"
    machine = (out / "machine.txt").read_text()
    md = ["# gemgate side-by-side benchmark", "", "```", machine.strip(), "```", ""]

    conc = [r for r in rows if r.get("test") == "concurrency"]
    levels = sorted({int(r["sessions"]) for r in conc})
    rounds = {}
    for r in conc:
        rounds.setdefault((r["label"], int(r["sessions"])), []).append(r)
    by = {k: median_row(rs) for k, rs in rounds.items()}
    nrounds = max((len(rs) for rs in rounds.values()), default=1)

    md += ["## Throughput and latency against concurrency",
           "",
           f"`tools/call echo`, payload {conc[0].get('payload', '?') if conc else '?'} B. "
           f"Each point is the median of its {nrounds} round(s) (the rounds interleaved over all points); calls/s shows "
           "the rounds' lowest and highest in brackets, and load the load averages the rounds started at. "
           "Latencies in µs. CPU and peak RSS are the gateway process's only (VmHWM; fresh process per row). "
           "×floor = throughput ÷ stdio floor's; +p50 = p50 minus the stdio floor's p50.", ""]
    md.append("| scenario | sessions | calls/s | p50 | p90 | p99 | +p50 vs stdio | gw CPU µs/call | gw peak RSS MiB | ×stdio | ×HTTP floor | ×supergateway | ×ToolHive | load |")
    md.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for n in levels:
        floor = by.get(("stdio", n), {})
        for s in ORDER:
            r = by.get((s, n))
            if r is None:
                continue
            if "error" in r:
                md.append(f"| {NAMES[s]} | {n} | failed: {r['error']} |||||||||||||")
                continue
            lat = r["latency_us"]
            tp = r["throughput"]

            def ratio(other):
                o = by.get((other, n))
                if not o or "throughput" not in o or other == s:
                    return "–"
                return f"{tp / o['throughput']:.2f}"

            added = lat["P50"] - floor["latency_us"]["P50"] if floor.get("latency_us") and s != "stdio" else None
            rss = r.get("gateway_peak_rss_kib")
            tps = fmt(tp)
            if r.get("rounds", 1) > 1:
                tps += f" ({r['tp_min']:,.0f}–{r['tp_max']:,.0f})"
            if r.get("failed_rounds"):
                tps += f"; {r['failed_rounds']} round(s) failed"
            md.append("| " + " | ".join([
                NAMES[s], str(n), tps, fmt(lat["P50"]), fmt(lat["P90"]), fmt(lat["P99"]),
                fmt(added), fmt(r.get("gateway_cpu_us_per_call")), fmt(rss / 1024 if rss else None, 1),
                ratio("stdio"), ratio("echofloor"), ratio("supergateway"), ratio("toolhive"), r.get("load", "")]) + " |")
    md.append("")

    # Where the machine's CPU went per call: the gateway, the workers under it (or under
    # loadgen, for (a) and (k)), loadgen, and the rest of what the machine did (the kernel's
    # work not charged to a process, other processes). Runs older than these fields show none.
    # At the goals' levels, 1 and 32 sessions (or the run's lowest and highest).
    at = sorted({n for n in levels if n in (1, 32)} or {levels[0], levels[-1]}) if levels else []
    split = [(n, s, by[(s, n)]) for n in at for s in ORDER
             if (s, n) in by and by[(s, n)].get("machine_busy_us_per_call") is not None]
    if split:
        md += ["## CPU per call by process", "",
               "Medians over the rounds, µs of CPU per measured call: the gateway process, every process under it "
               "(its workers; under loadgen for (a) and (k)), loadgen over the same phase, and the rest of the "
               "machine's busy time (`/proc/stat`, all CPUs). Busy is the share of the machine's CPUs in use. "
               "On a machine this busy, calls/s ≈ busy CPUs ÷ the machine's µs per call.", "",
               "| scenario | sessions | calls/s | gateway | workers | loadgen | rest | machine µs/call | busy |",
               "|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
        for n, s, r in split:
            gw, wk, lg, busy = (r.get("gateway_cpu_us_per_call") or 0), r["workers_cpu_us_per_call"], r["loadgen_cpu_us_per_call"], r["machine_busy_us_per_call"]
            md.append(f"| {NAMES[s]} | {n} | {fmt(r['throughput'])} | {fmt(r.get('gateway_cpu_us_per_call'))} | {fmt(wk)} | {fmt(lg)} | "
                      f"{fmt(float(round(busy - gw - wk - lg)))} | {fmt(busy)} | {r['machine_busy_share'] * 100:.0f} % |")
        md.append("")

    pay = [r for r in rows if r.get("test") == "payload"]
    if pay:
        md += ["## Large payloads", "", "| scenario | payload | sessions | calls/s | p50 µs | p99 µs | gw CPU µs/call | gw peak RSS MiB |",
               "|---|--:|--:|--:|--:|--:|--:|--:|"]
        for r in sorted(pay, key=lambda r: (int(r.get("payload", 0)), ORDER.index(r["label"]))):
            if "error" in r:
                md.append(f"| {NAMES[r['label']]} | {r.get('payload')} | failed: {r['error']} ||||||")
                continue
            rss = r.get("gateway_peak_rss_kib")
            md.append(f"| {NAMES[r['label']]} | {r['payload']} | {r['sessions']} | {fmt(r['throughput'])} | "
                      f"{fmt(r['latency_us']['P50'])} | {fmt(r['latency_us']['P99'])} | {fmt(r.get('gateway_cpu_us_per_call'))} | "
                      f"{fmt(rss / 1024 if rss else None, 1)} |")
        md.append("")

    open_rounds = {}
    for r in rows:
        if r.get("test") == "open":
            open_rounds.setdefault(r["label"], []).append(r)
    opens = [median_open(rs) for rs in open_rounds.values()]
    open_n = max((len(rs) for rs in open_rounds.values()), default=1)
    if opens:
        md += ["## Session open (initialize sent → its answer; worker start included)", "",
               f"Opens per round; each figure is the median of its {open_n} round(s) (interleaved), the rounds' lowest and "
               "highest p50 in brackets.", "",
               "| scenario | opens | p50 ms | p90 ms | p99 ms |", "|---|--:|--:|--:|--:|"]
        for r in sorted(opens, key=lambda r: ORDER.index(r["label"])):
            if "open_latency_us" not in r:
                md.append(f"| {NAMES[r['label']]} | failed: {r.get('error')} ||||")
                continue
            l = r["open_latency_us"]
            failed = f"; {r['failed_rounds']} round(s) failed" if r.get("failed_rounds") else ""
            md.append(f"| {NAMES[r['label']]} | {r['opens']} | {l['P50'] / 1e3:.2f}{p50_spread(r)}{failed} | {l['P90'] / 1e3:.2f} | {l['P99'] / 1e3:.2f} |")
        md.append("")

    idle_rounds = {}
    for r in rows:
        if r.get("test") == "idle":
            idle_rounds.setdefault((r["label"], int(r.get("sessions", 0))), []).append(r)
    idle = [median_idle(rs) for rs in idle_rounds.values()]
    idle_n = max((len(rs) for rs in idle_rounds.values()), default=1)
    if idle:
        md += ["## Idle sessions with open GET streams (tinyworker; gateway RSS only)", "",
               "Descriptors are the gateway process's (`/proc/PID/fd` after minus before, ÷ K open): with a worker "
               "per session (c) they include the gateway's ends of each worker's pipes and its pidfd; with a worker "
               "per user (g) the K sessions share alice's one worker. "
               f"Each point is the median memory per session of its {idle_n} round(s) (interleaved), "
               "the lowest and highest of the rounds ranked in brackets.", "",
               "| scenario | K asked | K open | open time s | RSS before MiB | RSS after MiB | KiB per session | fds per session | threads per session | note |",
               "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|"]
        for r in sorted(idle, key=lambda r: (ORDER.index(r["label"]), int(r.get("sessions", 0)))):
            if "open_sessions" not in r:
                md.append(f"| {NAMES[r['label']]} | {r.get('sessions')} | failed: {r.get('error')} ||||||||")
                continue
            md.append(f"| {NAMES[r['label']]} | {r['sessions']} | {r['open_sessions']} | {r['open_s']:.1f} | "
                      f"{r['gateway_rss_before_kib'] / 1024:.1f} | {r['gateway_rss_after_kib'] / 1024:.1f} | "
                      f"{fmt(r.get('per_session_kib'), 1)}{spread(r)} | {fmt(None if r.get('fds_per_session') is None else float(r['fds_per_session']), 2)} | "
                      f"{fmt(None if r.get('threads_per_session') is None else float(r['threads_per_session']), 2)} | "
                      f"{r.get('error', '')}{failed_note(r)} |")
        md.append("")

    # Goals of issue 18, at the top of the table: each a ratio of figures from this one run.
    g = ["## Goals (issue 18), from this run", "",
         "| goal | figure | met? |", "|---|---|---|"]

    def ok(v):
        return "**yes**" if v else "**no**"

    def tp(label, n):
        r = by.get((label, n))
        return r["throughput"] if r and "throughput" in r else None

    def cpu(label, n):
        r = by.get((label, n))
        return r.get("gateway_cpu_us_per_call") if r and "throughput" in r else None

    # The relay floor (j) bounds what any Go gateway relaying to one shared stdio worker can
    # reach on this machine; its rows say how far a goal is from that bound ("bound", no verdict).
    RF = NAMES["relayfloor"]
    u32, t32 = tp("gemgate-user", 32), tp("toolhive", 32)
    if u32 and t32:
        g.append(f"| 1. 32 sessions of one user, worker per user: ≥ 1.5× ToolHive | {u32:,.0f} vs {t32:,.0f} calls/s = {u32 / t32:.2f}× | {ok(u32 / t32 >= 1.5)} |")
    # What goal 1 asks of the gateway's own CPU, given the rest of this run: at the machine's
    # busy share and the workers' and loadgen's CPU per call of (g), calls/s follow the
    # machine's CPU per call, so 1.5× ToolHive needs that per-call total cut by the factor
    # (g)/(1.5 × ToolHive), all of it from the gateway.
    ug = by.get(("gemgate-user", 32), {})
    if u32 and t32 and ug.get("machine_busy_us_per_call") is not None and u32 < 1.5 * t32:
        busy, gw = ug["machine_busy_us_per_call"], ug["gateway_cpu_us_per_call"]
        need = gw - busy * (1 - u32 / (1.5 * t32))
        fl = cpu("echofloor", 32)
        g.append(f"| 1. bound: the gateway CPU per call (g) would need for 1.5× ToolHive, the machine's other CPU per call and busy share "
                 f"as in (g) ({busy:,.0f} µs per call in all, {ug['machine_busy_share'] * 100:.0f} % busy) | {need:,.0f} µs against (g)'s {gw:,.0f}"
                 + (f"; {need / fl:.2f}× the HTTP echo floor's {fl:,.0f}" if fl else "") + " | – |")
    r32 = tp("relayfloor", 32)
    if r32 and t32:
        g.append(f"| 1. bound: {RF} at 32 sessions ÷ ToolHive | {r32:,.0f} vs {t32:,.0f} calls/s = {r32 / t32:.2f}× | – |")
    # (k) drives one shared worker straight over its pipes: no gateway in front of one shared
    # worker passes more calls through it on this machine.
    k32 = tp("stdio-shared", 32)
    if k32 and t32:
        g.append(f"| 1. bound: {NAMES['stdio-shared']} at 32 sessions ÷ ToolHive | {k32:,.0f} vs {t32:,.0f} calls/s = {k32 / t32:.2f}× | – |")
    r1, s1 = tp("relayfloor", 1), tp("supergateway", 1)
    if r1 and s1:
        g.append(f"| 1. bound: {RF} at 1 session ÷ supergateway | {r1:,.0f} vs {s1:,.0f} calls/s = {r1 / s1:.2f}× | – |")
    for label in ["gemgate-auth", "gemgate-user"]:
        xs = [(n, tp(label, n) / tp("supergateway", n)) for n in levels if tp(label, n) and tp("supergateway", n)]
        if xs:
            worst = min(xs, key=lambda x: x[1])
            g.append(f"| 1. {NAMES[label]}: ≥ 2× supergateway at every level | lowest {worst[1]:.2f}× (at {worst[0]}); "
                     + ", ".join(f"{n}: {x:.2f}×" for n, x in xs) + f" | {ok(worst[1] >= 2)} |")
    for label in ["gemgate-auth", "gemgate-user", "gemgate-sessionless"]:
        c, f = cpu(label, 32), cpu("echofloor", 32)
        if c and f:
            g.append(f"| 2. gateway CPU per 100 B call, 32 sessions: ≤ 2× the HTTP echo floor's ({NAMES[label]}) | {c:,.0f} vs {f:,.0f} µs = {c / f:.2f}× | {ok(c / f <= 2)} |")
    c, f = cpu("relayfloor", 32), cpu("echofloor", 32)
    if c and f:
        g.append(f"| 2. bound: {RF}, CPU per 100 B call at 32 sessions ÷ the HTTP echo floor's | {c:,.0f} vs {f:,.0f} µs = {c / f:.2f}× | – |")
    e, f = by.get(("echofloor", 1)), by.get(("stdio", 1))
    if e and f and "latency_us" in e and "latency_us" in f:
        # A gateway puts an HTTP round trip in front of the same pipes: the echo floor's p50 is
        # one such round trip with nothing behind it.
        g.append(f"| 2. bound: {NAMES['echofloor']}, p50 at 1 session (one HTTP round trip, which every gateway adds) | "
                 f"{e['latency_us']['P50']:,.0f} µs | – |")
    for label in ["relayfloor", "gemgate-auth", "gemgate-user"]:
        a, f = by.get((label, 1)), by.get(("stdio", 1))
        if a and f and "latency_us" in a and "latency_us" in f:
            d = a["latency_us"]["P50"] - f["latency_us"]["P50"]
            if label == "relayfloor":
                g.append(f"| 2. bound: {RF}, p50 added over direct stdio at 1 session | {d:+,.0f} µs | – |")
            else:
                g.append(f"| 2. p50 added over direct stdio, 1 session: ≤ 150 µs ({NAMES[label]}) | {d:+,.0f} µs | {ok(d <= 150)} |")
    big = {(r["label"], int(r.get("payload", 0))): r for r in pay if "throughput" in r}
    fl = big.get(("echofloor", 1048576))
    for label in ["gemgate-auth", "gemgate-user", "gemgate-sessionless"]:
        r = big.get((label, 1048576))
        if r and fl:
            c, f = r["gateway_cpu_us_per_call"] / 1e3, fl["gateway_cpu_us_per_call"] / 1e3
            g.append(f"| 3. gateway CPU per 1 MiB call: ≤ 1.5× the HTTP floor's ({NAMES[label]}) | {c:,.1f} vs {f:,.1f} ms = {c / f:.2f}× | {ok(c / f <= 1.5)} |")
    ifl = [r for r in idle if r["label"] == "echofloor" and r.get("per_session_kib") is not None]
    idle_modes = {"gemgate-auth": "(c) worker per session", "gemgate-user": "(g) worker per user"}
    for label, mode in idle_modes.items():
        for r in sorted((r for r in idle if r["label"] == label and r.get("per_session_kib") is not None),
                        key=lambda r: int(r["sessions"])):
            if ifl:
                v, f = r["per_session_kib"], ifl[0]["per_session_kib"]
                # The goal of ≤ 1.25× the floor is retired (issue 36): the figure is stated, as a ratio.
                g.append(f"| 4. memory per idle session with a GET stream, {mode}, K = {r['open_sessions']} open ({r['sessions']} asked), "
                         f"÷ the HTTP floor's per connection: stated, no target (retired) | {v:.1f}{spread(r)} vs {f:.1f}{spread(ifl[0])} KiB = {v / f:.2f}× | – |")
            if r.get("fds_per_session") is not None:
                g.append(f"| 4. descriptors per idle session, {mode}, K = {r['open_sessions']} open: stated, no target | "
                         f"{r['fds_per_session']:.2f} in the gateway | – |")
    ob = {r["label"]: r for r in opens if "open_latency_us" in r}
    if "gemgate-user" in ob:
        v = ob["gemgate-user"]["open_latency_us"]["P50"] / 1e3
        spawn = ob.get("stdio", {}).get("open_latency_us", {}).get("P50")
        first = ob.get("gemgate-auth", {}).get("open_latency_us", {}).get("P50")
        extra = ""
        if first is not None and spawn is not None:
            extra = f"; an open with a worker start (c) {first / 1e3:.2f} ms, raw spawn (a) {spawn / 1e3:.2f} ms"
        g.append(f"| 5. session open on a running per-user worker: ≤ 1 ms p50 | {v:.2f}{p50_spread(ob['gemgate-user'])} ms (g){extra} | {ok(v <= 1)} |")
    for n in levels:
        m, u = tp("gemgate-sessionless", n), tp("gemgate-user", n)
        if m and u:
            g.append(f"| 6. sessionless requests: the legacy goals ({n} session(s)) | {m:,.0f} calls/s = {m / u:.2f}× legacy (g)"
                     + (f", {m / tp('toolhive', n):.2f}× ToolHive" if tp("toolhive", n) else "") + " | see 1–2 |")
    g.append("")
    hap = []
    for n in levels:
        h, u = by.get(("gemgate-haproxy", n)), by.get(("gemgate-user", n))
        if h and u and "latency_us" in h and "latency_us" in u:
            hap.append(f"| {n} | {u['latency_us']['P50']:,.0f} | {h['latency_us']['P50']:,.0f} | {h['latency_us']['P50'] - u['latency_us']['P50']:+,.0f} | "
                       f"{u['latency_us']['P99']:,.0f} | {h['latency_us']['P99']:,.0f} | {h['latency_us']['P99'] - u['latency_us']['P99']:+,.0f} | "
                       f"{u['throughput']:,.0f} | {h['throughput']:,.0f} |")
    if hap:
        g += ["## Added latency of HAProxy in front of one gemgate ((i) vs (g)), µs", "",
              "| sessions | p50 direct | p50 via HAProxy | added | p99 direct | p99 via HAProxy | added | calls/s direct | calls/s via HAProxy |",
              "|--:|--:|--:|--:|--:|--:|--:|--:|--:|"] + hap + [""]
    md = md[:6] + g + md[6:]
    (out / "table.md").write_text("\n".join(md))

    # Chart.
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8))
    for s in ORDER:
        pts = [(n, by[(s, n)]) for n in levels if (s, n) in by and "throughput" in by[(s, n)]]
        if not pts:
            continue
        xs = [n for n, _ in pts]
        ax1.plot(xs, [r["throughput"] for _, r in pts], marker="o", label=NAMES[s])
        ax2.plot(xs, [r["latency_us"]["P99"] / 1e3 for _, r in pts], marker="o", label=NAMES[s])
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xticks(levels, [str(n) for n in levels])
        ax.set_xlabel("concurrent sessions")
        ax.grid(True, alpha=.3)
    ax1.set_ylabel("tools/call per second")
    ax1.set_title("Throughput")
    ax2.set_ylabel("p99 latency, ms (log)")
    ax2.set_yscale("log")
    ax2.set_title("p99 latency")
    ax1.legend(fontsize=8)
    first = machine.splitlines()
    fig.suptitle("gemgate vs peers, echo 100 B, " + ", ".join(l for l in first if l.startswith(("nproc", "cpu"))), fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "chart.png", dpi=110)
    print((out / "table.md").read_text())


if __name__ == "__main__":
    main(sys.argv[1])
