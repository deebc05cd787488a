"""Turns a bench/run.sh results directory into table.md and chart.png (gemgate benchmarks)."""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ORDER = ["stdio", "echofloor", "gemgate-auth", "gemgate-noauth", "gemgate-user", "supergateway", "toolhive"]
NAMES = {
    "stdio": "(a) worker over stdio (floor)",
    "echofloor": "(b) Go HTTP echo (HTTP floor)",
    "gemgate-auth": "(c) gemgate, JWT on",
    "gemgate-noauth": "(d) gemgate, auth none",
    "gemgate-user": "(g) gemgate, JWT on, one worker per user",
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


def main(out):
    out = Path(out)
    rows = [json.loads(l) for l in (out / "results.jsonl").read_text().splitlines() if l.strip()]
    machine = (out / "machine.txt").read_text()
    md = ["# gemgate side-by-side benchmark", "", "```", machine.strip(), "```", ""]

    conc = [r for r in rows if r.get("test") == "concurrency"]
    levels = sorted({int(r["sessions"]) for r in conc})
    by = {(r["label"], int(r["sessions"])): r for r in conc}

    md += ["## Throughput and latency against concurrency",
           "",
           f"`tools/call echo`, payload {conc[0].get('payload', '?') if conc else '?'} B. "
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
            md.append("| " + " | ".join([
                NAMES[s], str(n), fmt(tp), fmt(lat["P50"]), fmt(lat["P90"]), fmt(lat["P99"]),
                fmt(added), fmt(r.get("gateway_cpu_us_per_call")), fmt(rss / 1024 if rss else None, 1),
                ratio("stdio"), ratio("echofloor"), ratio("supergateway"), ratio("toolhive"), r.get("load", "")]) + " |")
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

    opens = [r for r in rows if r.get("test") == "open"]
    if opens:
        md += ["## Session open (initialize sent → its answer; worker start included)", "",
               "| scenario | opens | p50 ms | p90 ms | p99 ms |", "|---|--:|--:|--:|--:|"]
        for r in sorted(opens, key=lambda r: ORDER.index(r["label"])):
            if "error" in r:
                md.append(f"| {NAMES[r['label']]} | failed: {r['error']} ||||")
                continue
            l = r["open_latency_us"]
            md.append(f"| {NAMES[r['label']]} | {r['opens']} | {l['P50'] / 1e3:.2f} | {l['P90'] / 1e3:.2f} | {l['P99'] / 1e3:.2f} |")
        md.append("")

    idle = [r for r in rows if r.get("test") == "idle"]
    if idle:
        md += ["## Idle sessions with open GET streams (tinyworker; gateway RSS only)", "",
               "| scenario | K asked | K open | open time s | RSS before MiB | RSS after MiB | KiB per session | note |",
               "|---|--:|--:|--:|--:|--:|--:|---|"]
        for r in sorted(idle, key=lambda r: (ORDER.index(r["label"]), int(r.get("sessions", 0)))):
            if "open_sessions" not in r:
                md.append(f"| {NAMES[r['label']]} | {r.get('sessions')} | failed: {r.get('error')} ||||||")
                continue
            md.append(f"| {NAMES[r['label']]} | {r['sessions']} | {r['open_sessions']} | {r['open_s']:.1f} | "
                      f"{r['gateway_rss_before_kib'] / 1024:.1f} | {r['gateway_rss_after_kib'] / 1024:.1f} | "
                      f"{fmt(r.get('per_session_kib'), 1)} | {r.get('error', '')} |")
        md.append("")

    # Goals.
    g = ["## Goals (figures, not assertions)", ""]
    a32, best = by.get(("gemgate-auth", 32)), None
    peers32 = [by[(p, 32)] for p in PEERS if (p, 32) in by and "throughput" in by[(p, 32)]]
    if a32 and "throughput" in a32 and peers32:
        best = max(peers32, key=lambda r: r["throughput"])
        x = a32["throughput"] / best["throughput"]
        g.append(f"- gemgate auth-on at 32 sessions: {a32['throughput']:,.0f} calls/s vs best peer "
                 f"{best['label']} {best['throughput']:,.0f} calls/s = **{x:.2f}×** (goal ≥ 2×: {'met' if x >= 2 else 'not met'})")
    for n in levels:
        a, f = by.get(("gemgate-auth", n)), by.get(("stdio", n))
        if a and f and "latency_us" in a and "latency_us" in f:
            d = a["latency_us"]["P50"] - f["latency_us"]["P50"]
            g.append(f"- p50 added over the stdio floor, auth on, {n} session(s): **{d:,.0f} µs** (goal < 150 µs: {'met' if d < 150 else 'not met'})")
    for r in idle:
        if r["label"] == "gemgate-auth" and r.get("per_session_kib") is not None:
            v = r["per_session_kib"]
            g.append(f"- idle session with open GET stream, K={r['open_sessions']}: **{v:.1f} KiB** of gateway RSS (goal < 32 KiB: {'met' if v < 32 else 'not met'})")
    md += g + [""]
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
