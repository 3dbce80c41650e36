#!/usr/bin/env python3
"""Regenerates docs/reproduction.md and its figures (docs/fig_*.png) by running the crawleval CLI.

usage: reproduce.py CRAWLEVAL_BINARY [--quick]
Run through scripts/reproduce, which installs matplotlib and builds the binary first.
"""
import csv
import json
import math
import os
import subprocess
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
BIN = sys.argv[1]
QUICK = "--quick" in sys.argv
TMP = tempfile.mkdtemp(prefix="crawleval-repro-")
POLICIES = ["whittle", "greedy", "round_robin", "random", "static"]
SLIDES = {"round_robin": 208, "greedy": 260, "whittle": 285}


def crawleval(*args):
    cmd = [BIN, *map(str, args)]
    print("  $ crawleval " + " ".join(map(str, args)), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def run_json(*args):
    path = os.path.join(TMP, f"r{len(os.listdir(TMP))}.json")
    crawleval("run", *args, "--no-progress", "--json", path)
    with open(path) as f:
        return json.load(f)


def optimal(budget):
    path = os.path.join(TMP, f"o{budget}.json")
    crawleval("optimal", "--paper-example", "--budget", budget, "--json", path)
    with open(path) as f:
        return json.load(f)


def trace(path, *args):
    crawleval("run", *args, "--no-progress", "--trace", path, "--no-bound")
    rows = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            rows.setdefault(r["policy"], []).append(r)
    return rows


def ci(p):
    lo, hi = p["ci95_low"], p["ci95_high"]
    if lo is None:
        return f"{p['mean_reward']:.2f}"
    return f"{p['mean_reward']:.2f} [{lo:.2f}, {hi:.2f}]"


def state_figure(rows, title, path, epochs=30):
    ids = sorted({int(r["source"]) for r in rows})
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for sid in ids:
        rs = [r for r in rows if int(r["source"]) == sid and int(r["epoch"]) <= epochs]
        t = [int(r["epoch"]) for r in rs]
        x = [float(r["state"]) for r in rs]
        line, = ax.plot(t, x, marker=".", label=f"source {sid}")
        ct = [int(r["epoch"]) for r in rs if r["crawled"] == "1"]
        cx = [float(r["state"]) for r in rs if r["crawled"] == "1"]
        ax.scatter(ct, cx, s=60, facecolors="none", edgecolors=line.get_color())
    ax.set_xlabel("epoch t")
    ax.set_ylabel("state X_i(t) (circles: crawled)")
    ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

def lspe_ci(v, key="ci95"):
    """A learner's mean with its interval, or the mean alone where its replications are copies
    (the top rule draws nothing in the deterministic model)."""
    m = v["mean_reward"] if key == "ci95" else v["mean_reward_second_half"]
    lo, hi = v[key]
    return f"{m:.1f}" if lo is None else f"{m:.1f} [{lo:.1f}, {hi:.1f}]"


def paired_gain(j, a, b):
    """Mean of b - a over paired replications (same draws) with its 95% half-width."""
    ra = next(p for p in j["policies"] if p["name"] == a)["replication_rewards"]
    rb = next(p for p in j["policies"] if p["name"] == b)["replication_rewards"]
    d = [y - x for x, y in zip(ra, rb)]
    n = len(d)
    m = sum(d) / n
    if n < 2:
        return m, float("nan")
    sd = (sum((v - m) ** 2 for v in d) / (n - 1)) ** 0.5
    return m, 1.96 * sd / n ** 0.5


def write_sources(name, rows):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write("id,lambda,xi,mu\n")
        for k, (lam, xi, mu) in enumerate(rows, 1):
            f.write(f"{k},{lam},{xi},{mu}\n")
    return path


TABLE1 = ((1.0, 0.7), (0.7, 0.35), (0.2, 0.7), (0.08, 0.21))


def utility_law_section(reps):
    md = ["## 6. Any utility law, and the slides' 285\n"]
    md.append("The research report's model lets an item's initial utility xi_n be any non-negative law "
              "with finite mean (section 2). `--utility` takes `deterministic`, `exponential`, "
              "`lognormal:SIGMA`, `pareto:A` (tail index a >= 1.5), `gamma:K` and `empirical:FILE` (a "
              "table of values and probabilities); every law is scaled to the source's mean xi, so u, "
              "Theorem 1's index and the bound are unchanged and only the spread of an epoch's content "
              "U changes. The draws are counter-based and shared by every engine (`rng.hpp` lists the "
              "words each law reads); `tests/test_utility_law.cpp` checks each law against its "
              "closed-form distribution and U's mean, variance and the transition's expectation "
              "against the compound-Poisson closed forms.\n")
    table = os.path.join(TMP, "two_point.csv")
    with open(table, "w") as f:
        f.write("value,probability\n0,0.99\n100,0.01\n")
    laws = ["deterministic", "exponential", "gamma:0.1", "gamma:0.01", "pareto:2.5", "pareto:1.5",
            "lognormal:1", "lognormal:2", "lognormal:2.5", "empirical:" + table]
    md.append(f"Table 1's rates and means, M = 1, {reps} replications of 1000 epochs after 100, 95% CI. "
              "`whittle_numerical` is section 7's index. The empirical law is two points, 0 with "
              "probability 0.99 and 100 xi with 0.01: in law the sensitivity check's rarer arrivals "
              "(section 2, Lambda = 2.5, xi x 100, deterministic items).\n")
    md.append("| utility law | E[Z^2] | whittle (full) | whittle_numerical (full) | greedy (full) | "
              "greedy (belief) | round robin |")
    md.append("|---|---|---|---|---|---|---|")
    e2 = {"deterministic": "1", "exponential": "2", "gamma:0.1": "11", "gamma:0.01": "101",
          "pareto:2.5": "1.2", "pareto:1.5": "inf", "lognormal:1": "2.72", "lognormal:2": "54.6",
          "lognormal:2.5": "518", "empirical:" + table: "100"}
    whittle_by_law = {}
    for law in laws:
        full = run_json("--paper-example", "--budget", 1, "--model", "stochastic", "--utility", law,
                        "--replications", reps, "--epochs", 1000, "--burn-in", 100, "--policy",
                        "whittle,whittle_numerical,greedy,round_robin", "--no-bound")
        bel = run_json("--paper-example", "--budget", 1, "--model", "stochastic", "--utility", law,
                       "--observe", "belief", "--replications", reps, "--epochs", 1000, "--burn-in",
                       100, "--policy", "greedy", "--no-bound")
        v = {p["name"]: ci(p) for p in full["policies"]}
        whittle_by_law[law] = next(p for p in full["policies"] if p["name"] == "whittle")
        name = "empirical (two points)" if law.startswith("empirical") else law
        md.append(f"| {name} | {e2[law]} | {v['whittle']} | {v['whittle_numerical']} | {v['greedy']} "
                  f"| {ci(bel['policies'][0])} | {v['round_robin']} |")
    md.append("")
    sigmas = [0.5, 1.0, 1.5, 2.0, 2.25, 2.5, 2.75, 3.0]
    sweep = []
    for sg in sigmas:
        j = run_json("--paper-example", "--budget", 1, "--model", "stochastic", "--utility",
                     f"lognormal:{sg}", "--replications", reps, "--epochs", 1000, "--burn-in", 100,
                     "--policy", "whittle,whittle_numerical", "--no-bound")
        sweep.append({p["name"]: p for p in j["policies"]})
    w = [r["whittle"]["mean_reward"] for r in sweep]
    cross = None
    inside = [sg for sg, r in zip(sigmas, sweep)
              if r["whittle"]["ci95_low"] <= 285 <= r["whittle"]["ci95_high"]]
    for k in range(1, len(sigmas)):
        if w[k - 1] < 285 <= w[k]:
            t = (285 - w[k - 1]) / (w[k] - w[k - 1])
            cross = sigmas[k - 1] + t * (sigmas[k] - sigmas[k - 1])
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name, mk in (("whittle", "o"), ("whittle_numerical", "s")):
        m = [r[name]["mean_reward"] for r in sweep]
        lo = [r[name]["mean_reward"] - r[name]["ci95_low"] for r in sweep]
        hi = [r[name]["ci95_high"] - r[name]["mean_reward"] for r in sweep]
        ax.errorbar(sigmas, m, yerr=[lo, hi], marker=mk, capsize=3, label=f"{name} (full observation)")
    ax.axhline(285, color="r", ls="--", label="slides: Whittle 285")
    ax.axhline(260.39, color="gray", ls=":", label="greedy (belief) = deterministic optimum 260.39")
    ax.axhline(208.33, color="k", ls=":", label="round robin 208.33")
    ax.set_xlabel("lognormal sigma of an item's utility (mean xi kept)")
    ax.set_ylabel("mean reward per epoch")
    ax.set_title("Table 1's rates and means, M = 1: the reward against the utility law's spread")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(DOCS, "fig_utility_laws.png"), dpi=110)
    plt.close(fig)
    md.append("![reward against the utility law's spread](fig_utility_laws.png)\n")
    md.append("| lognormal sigma | " + " | ".join(f"{sg:g}" for sg in sigmas) + " |")
    md.append("|---|" + "---|" * len(sigmas))
    md.append("| whittle (full) | " + " | ".join(ci(r["whittle"]) for r in sweep) + " |")
    md.append("| whittle_numerical (full) | " + " | ".join(ci(r["whittle_numerical"]) for r in sweep)
              + " |")
    md.append("")
    md.append("**The slides' 285, characterised, not settled.** The slides report three numbers for "
              "Table 1 with M = 1: "
              "round robin 208, greedy 260, Whittle 285, without saying which law the items' utilities "
              "follow. Round robin and the slides' greedy (greedy under belief) decide from the ages "
              "alone, and a crawl collects the state, whose expectation given the ages is the "
              "deterministic model's; so their long-run rewards are 208.33 and 260.39 for *every* law "
              "with Table 1's means (the table above shows them within their CIs for each law). Only "
              "the Whittle policy under full observation depends on the law: it gains from the spread of "
              "an epoch's content. With the deterministic or exponential law it earns "
              f"{whittle_by_law['deterministic']['mean_reward']:.2f} and "
              f"{whittle_by_law['exponential']['mean_reward']:.2f}, and the 285 is not reproduced "
              "(section 2). With heavier tails it rises: ")
    md[-1] += (f"a lognormal law reaches 285 at sigma of about {cross:.2f} (E[Z^2] = e^(sigma^2) about "
               f"{math.exp(cross * cross):.0f}; the 95% CI contains 285 for sigma in "
               f"{{{', '.join(f'{sg:g}' for sg in inside)}}}); " if cross else
               "no lognormal sigma up to 3 reaches 285 in this run; ")
    best_other = max(whittle_by_law[l]["mean_reward"] for l in ("pareto:1.5", "gamma:0.01"))
    md[-1] += (f"Pareto tails (a >= 1.5) and gamma laws (k >= 0.01) stay below it (at most "
               f"{best_other:.1f}). So the slides' three "
               "numbers are consistent with Table 1's rates and means and a utility law whose squared "
               "coefficient of variation is in the hundreds to thousands (one parameter fitted to one "
               "number), and inconsistent with the exponential or deterministic law. The slides do not "
               "state their law, so which one produced 285 cannot be determined from them; the "
               "reproduction stops at this characterisation.\n")
    cross283 = None
    for k in range(1, len(sigmas)):
        if w[k - 1] < 283 <= w[k]:
            cross283 = sigmas[k - 1] + (283 - w[k - 1]) / (w[k] - w[k - 1]) * (sigmas[k] - sigmas[k - 1])
    md.append("**The learning paper's 283 has the same status.** It reports 283 for \"the Whittle index "
              "with one arm\" on Table 1's sources (citing the journal version of the research report), "
              "again without a law: the deterministic model's Whittle policy earns 260.39 (section 1). "
              + (f"The same lognormal sweep reaches 283 at sigma of about {cross283:.2f} "
                 f"(E[Z^2] about {math.exp(cross283 * cross283):.0f}), "
                 if cross283 else "No lognormal sigma of the sweep reaches 283 in this run, ")
              + "one parameter fitted to one number, as for the 285; it characterises the figure and "
              "does not settle it.\n")
    return md


def numerical_index_section(reps):
    md = ["## 7. The stochastic model's Whittle index, computed numerically\n"]
    md.append("In the stochastic model under full observation the slides apply Theorem 1's "
              "deterministic index to the random states \"just as a heuristic\" and mention "
              "\"numerical procedures for the Whittle index in the stochastic case\". crawleval computes "
              "that index (`include/crawleval/analysis/stochastic_index.hpp`): per class of sources (lambda T, "
              "mu T, utility law), the law of an epoch's content U on a lattice (mean kept exactly, "
              "Panjer's recursion), every threshold policy's renewal cycle (length T_b, collected R_b) "
              "from one LU factorisation, and for every lattice state the subsidy at which crawling "
              "now and waiting are equally good, c_m = R_m - T_m (Q_m - x_m) / L_m (L_m, Q_m: the cycle "
              "that waits at x_m); Theorem 1's index is this formula's value when U = u. Indexability "
              "(the passive set grows with the subsidy) holds when c_m does not decrease; it is checked "
              "for every class and held in every case below. Tests: against a brute force (policy "
              "iteration and bisection on the same lattice) to 1e-7, threshold cycles against a Monte "
              "Carlo run of the continuous model with the engines' draws, and the two-source exact "
              "optimum (below). `crawleval index` prints the index per source; `crawleval run --policy "
              "whittle_numerical` runs it (through the function engine, on the CPU).\n")
    rare = write_sources("rare_index.csv", [(2.5, xi * 100, mu) for xi, mu in TABLE1])
    curves = {}
    summaries = {}
    for key, src in (("table1", ["--paper-example"]), ("rare", ["--sources", rare])):
        out = os.path.join(TMP, f"index_{key}.csv")
        js = os.path.join(TMP, f"index_{key}.json")
        crawleval("index", *src, "--out", out, "--json", js)
        with open(js) as f:
            summaries[key] = json.load(f)
        with open(out) as f:
            curves[key] = list(csv.DictReader(f))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, key, title in ((axes[0], "table1", "Table 1 (Lambda = 250)"),
                           (axes[1], "rare", "rarer, larger arrivals (Lambda = 2.5, xi x 100)")):
        for sid, color in (("1", "C0"), ("2", "C1")):
            rows = [r for r in curves[key] if r["source"] == sid]
            x = [float(r["x"]) for r in rows]
            ax.plot(x, [float(r["index"]) for r in rows], color=color, label=f"source {sid}: numerical")
            ax.plot(x, [float(r["theorem1"]) for r in rows], color=color, ls="--",
                    label=f"source {sid}: Theorem 1")
        ax.set_xlabel("state x")
        ax.set_ylabel("index (subsidy per unit cost)")
        ax.set_title(title + ", exponential items")
        ax.set_xlim(0, 600)
        ax.set_ylim(0, 600)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(DOCS, "fig_numerical_index.png"), dpi=110)
    plt.close(fig)
    md.append("![numerical index against Theorem 1](fig_numerical_index.png)\n")
    md.append("| source | u | index at u, Table 1 | Theorem 1 at u | index at u, rare arrivals | "
              "index at u*, Table 1 | index at u*, rare | Theorem 1 at u* |")
    md.append("|---|---|---|---|---|---|---|---|")
    for a, b in zip(summaries["table1"]["sources"], summaries["rare"]["sources"]):
        md.append(f"| {a['id']} | {a['u']:.2f} | {a['index_at_u']:.2f} | {a['theorem1_at_u']:.2f} | "
                  f"{b['index_at_u']:.2f} | {a['index_at_u_star']:.2f} | {b['index_at_u_star']:.2f} | "
                  f"{a['theorem1_at_u_star']:.2f} |")
    md.append("")
    s1 = summaries["rare"]["sources"][0]
    t1 = summaries["table1"]["sources"]
    rr = summaries["rare"]["sources"]
    def rel(a, b):
        return 100 * (a / b - 1)
    md.append("**The report's section 7 is contradicted.** It states that in the stochastic case \"the "
              "Whittle index is actually the same\" as Theorem 1's: its derivation keeps \"the "
              "expression (16) for eta_2(x)\", the deterministic time to the next crawl, and "
              "E[X(eta)] = (1 - alpha^eta) u*, which holds for a fixed eta only. In the stochastic "
              "model the time to the next crawl is a stopping time that depends on the arrivals, so "
              "the passive value of a state is not the deterministic one and the index changes. "
              "Computed above, the index differs from Theorem 1's at every state but 0: at x = u by "
              + ", ".join(f"{rel(a['index_at_u'], a['theorem1_at_u']):+.1f}%" for a in t1)
              + " for sources 1-4 with Table 1's arrivals and by "
              + ", ".join(f"{rel(b['index_at_u'], a['theorem1_at_u']):+.1f}%" for a, b in zip(t1, rr))
              + " with rare, large ones; at x = u* by "
              + ", ".join(f"{rel(a['index_at_u_star'], a['theorem1_at_u_star']):+.1f}%" for a in t1)
              + " (Table 1) and "
              + ", ".join(f"{rel(b['index_at_u_star'], a['theorem1_at_u_star']):+.1f}%" for a, b in zip(t1, rr))
              + " (rare arrivals). The difference grows with the spread of an epoch's content and "
              "vanishes as it goes to 0 (the deterministic model). What does carry over is "
              "indexability (checked for every class), and the policy the heuristic gives is close "
              "to the true index's (below).\n")
    md.append(f"At x = u the true index of source 1 is {s1['index_at_u']:.1f} for rare, large arrivals "
              f"(exponential items) against Theorem 1's {s1['theorem1_at_u']:.1f}: an earlier hand "
              "estimate said about 111; the brute-force test confirms the lattice value (deterministic "
              "items give 111.8, the likely source of that estimate). With Table 1's 250 arrivals per "
              f"epoch the two indices nearly agree below u ({summaries['table1']['sources'][0]['index_at_u']:.1f} "
              "at u) and part above it: the true index values states near u* below x/C, because a "
              "state that high will also be high after a passive epoch.\n")
    md.append("**The policy's gain over the heuristic.** Paired replications (the same draws for both "
              f"policies), {reps} replications of 1000 epochs after 100; the gain's 95% CI is over the "
              "paired differences.\n")
    md.append("| scenario | M | whittle (Theorem 1) | whittle_numerical | gain | greedy (full) |")
    md.append("|---|---|---|---|---|---|")
    classes = write_sources("classes.csv", [(lam / 100, xi * 100, mu)
                                            for _ in range(5) for lam, xi, mu in
                                            [(250, x, m) for x, m in TABLE1]])
    scenarios = [("Table 1, exponential", ["--paper-example"], "exponential", 1),
                 ("Table 1, lognormal sigma 2.5", ["--paper-example"], "lognormal:2.5", 1),
                 ("rare arrivals, exponential", ["--sources", rare], "exponential", 1),
                 ("rare arrivals, exponential", ["--sources", rare], "exponential", 2),
                 ("rare arrivals, deterministic", ["--sources", rare], "deterministic", 1),
                 ("20 sources (Table 1's 4, x 5), rare arrivals", ["--sources", classes],
                  "exponential", 4)]
    rel_gains = []
    for name, src, law, m in scenarios:
        j = run_json(*src, "--budget", m, "--model", "stochastic", "--utility", law, "--replications",
                     reps, "--epochs", 1000, "--burn-in", 100, "--policy",
                     "whittle,whittle_numerical,greedy", "--no-bound")
        v = {p["name"]: ci(p) for p in j["policies"]}
        g, hw = paired_gain(j, "whittle", "whittle_numerical")
        base = next(p for p in j["policies"] if p["name"] == "whittle")["mean_reward"]
        rel_gains.append((100 * g / base, name, m, g - hw > 0))
        md.append(f"| {name} | {m} | {v['whittle']} | {v['whittle_numerical']} | {g:+.2f} +- {hw:.2f} "
                  f"| {v['greedy']} |")
    md.append("")
    lo, hi = min(rel_gains), max(rel_gains)
    significant = sum(1 for r in rel_gains if r[3])
    md.append(f"The numerical index gains {lo[0]:.2f}% ({lo[1]}, M = {lo[2]}) to {hi[0]:.2f}% ({hi[1]}, "
              f"M = {hi[2]}) over Theorem 1's heuristic; the paired 95% CI excludes 0 in {significant} "
              f"of the {len(rel_gains)} scenarios. The gain is small because both indices rank the "
              "usual states alike and differ mostly on states the policy rarely meets. "
              "Its value against the exact optimum: `StochasticIndex.PolicyIsNearTheJoint"
              "OptimumAndAheadOfTheHeuristic` solves a two-source, one-crawl problem with rare arrivals "
              "exactly on its lattice (relative value iteration over the joint chain, no simulation): "
              "optimum 2.88459, numerical index policy 2.88303 (0.05% below), Theorem 1's heuristic "
              "2.88089 (0.13% below). The Lagrangian bound (docs/model.md) does not hold under full "
              "observation (a policy that sees the states can beat it), so the simulated cases have no "
              "bound.\n")
    return md


def mixed_adaptive_section(reps):
    md = ["## 8. Mixed observation and the adaptive Whittle policy\n"]
    md.append("The research report notes that \"one could also consider mixed situations when some "
              "sources are observed and others are not\" (section 7) and announces \"the adaptive "
              "version when some parameters (e.g., the rate of new information arrival) need to be "
              "estimated online\" (section 9). crawleval reads an `observe` column (full or belief per "
              "source) in the sources CSV; `--policy whittle_mixed,greedy_mixed` rank each source by "
              "what it reveals (its state, or its expected state given the time since its last "
              "crawl), with the engines' own functions, so that all-full and all-belief are the "
              "built-in policies bit for bit (tested). The engines' `whittle` and `greedy` refuse a "
              "population with the column rather than ignore it. `adaptive_whittle` knows mu and the "
              "costs and estimates lambda xi per source: a belief source from its crawls (a crawl "
              "at age k collects X with mean u* (1 - alpha^k): u*^ = sum X / sum (1 - alpha^k)), a full "
              "source from every epoch's arrivals; unexplored sources first, a source whose "
              "observations are all empty keeps an optimistic estimate that fades with the evidence, "
              "and every estimate carries a small exploration bonus (as UCB's) so that an early low "
              "estimate cannot starve its source of the crawls that would correct it. "
              "In the deterministic model one observation is exact, and the adaptive policy reaches "
              "the optimum 260.39 (tested).\n")
    md.append(f"Rarer, larger arrivals (Lambda = 2.5, xi x 100; section 2), M = 1, {reps} replications "
              "of 1000 epochs after 100, 95% CI:\n")
    md.append("| observe column (sources 1, 2, 3, 4) | whittle_mixed | greedy_mixed | adaptive_whittle "
              "| round robin |")
    md.append("|---|---|---|---|---|")
    for cols in (("full",) * 4, ("belief",) * 4, ("full", "belief", "full", "belief"),
                 ("belief", "full", "belief", "full")):
        path = os.path.join(TMP, "mixed_" + "_".join(cols) + ".csv")
        with open(path, "w") as f:
            f.write("id,lambda,xi,mu,observe\n")
            for k, ((xi, mu), o) in enumerate(zip(TABLE1, cols), 1):
                f.write(f"{k},2.5,{xi * 100},{mu},{o}\n")
        j = run_json("--sources", path, "--budget", 1, "--model", "stochastic", "--replications", reps,
                     "--epochs", 1000, "--burn-in", 100, "--policy",
                     "whittle_mixed,greedy_mixed,adaptive_whittle,round_robin", "--no-bound")
        v = {p["name"]: ci(p) for p in j["policies"]}
        md.append(f"| {', '.join(cols)} | {v['whittle_mixed']} | {v['greedy_mixed']} | "
                  f"{v['adaptive_whittle']} | {v['round_robin']} |")
    md.append("")
    curves = {}
    for key, src in (("table1", ["--paper-example"]),
                     ("rare", ["--sources", write_sources("rare_adaptive.csv",
                                                          [(2.5, xi * 100, mu) for xi, mu in TABLE1])])):
        path = os.path.join(TMP, f"adaptive_{key}.csv")
        crawleval("learn", "adaptive-whittle", *src, "--budget", 1, "--observe", "belief",
                  "--epochs", 3000, "--replications", 50 if QUICK else 200, "--window", 100,
                  "--curve", path)
        with open(path) as f:
            curves[key] = list(csv.DictReader(f))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for ax, key, title in ((axes[0], "table1", "Table 1 (Lambda = 250)"),
                           (axes[1], "rare", "rarer, larger arrivals (Lambda = 2.5, xi x 100)")):
        rows = curves[key]
        x = [float(r["window"]) for r in rows]
        for name, label in (("adaptive", "adaptive Whittle (estimates lambda xi)"),
                            ("known", "Whittle, known parameters")):
            ax.plot(x, [float(r[f"{name}_mean"]) for r in rows], label=label)
            ax.fill_between(x, [float(r[f"{name}_ci95_low"]) for r in rows],
                            [float(r[f"{name}_ci95_high"]) for r in rows], alpha=0.25)
        ax.set_xlabel("epoch (windows of 100)")
        ax.set_ylabel("mean reward per epoch")
        ax.set_title(title + ", belief, M = 1")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(DOCS, "fig_adaptive_whittle.png"), dpi=110)
    plt.close(fig)
    md.append("Learning curves under belief observation (`crawleval learn adaptive-whittle`), 95% CI "
              "over replications, same draws for both policies:\n")
    md.append("![adaptive Whittle policy learning curves](fig_adaptive_whittle.png)\n")
    for key, name in (("table1", "Table 1"), ("rare", "rare arrivals")):
        rows = curves[key]
        first, last = rows[0], rows[-1]
        md.append(f"- {name}: first 100 epochs {float(first['adaptive_mean']):.1f} against "
                  f"{float(first['known_mean']):.1f} with known parameters; last 100 epochs "
                  f"{float(last['adaptive_mean']):.1f} [{float(last['adaptive_ci95_low']):.1f}, "
                  f"{float(last['adaptive_ci95_high']):.1f}] against {float(last['known_mean']):.1f} "
                  f"[{float(last['known_ci95_low']):.1f}, {float(last['known_ci95_high']):.1f}].")
    md.append("")
    return md


def learning_measures_section(runs, reps_l):
    md = ["## 9. The learning papers' own measures\n"]
    md.append("### MirrorSync: regret, the theory's parameters, Lemma 3, round-varying costs\n")
    md.append("Section 5 of the MirrorSync paper measures regret: Reg = E sum_t J^t(r^t) - sum_t "
              "J^t(r*), r* the best fixed rates over K_0, split into the in-policy regret (against "
              "r*_eps over K_eps) and the exploration gap sum_t (J^t(r*_eps) - J^t(r*)). `learn "
              "mirrorsync` reports them per round with 95% CIs over runs (`--curve`, `--json`). "
              "`--theory` sets Corollary 1's eps = T^(-1/3) L^(1/3) and eta = (K / U) sqrt(L eps / T), "
              "L = log(B / (r_min K)); U is the cost cap (the paper uses 40; `--cost-cap`). "
              f"Polynomial costs, the paper's setting, {runs} runs, 240 rounds:\n")
    rows = {}
    for mode, extra in (("tuned (eta 2.7, eps 0.05)", []), ("theory (Corollary 1, U = 40)",
                                                          ["--theory", "--cost-cap", 40])):
        js = os.path.join(TMP, f"regret_{len(rows)}.json")
        cv = os.path.join(TMP, f"regret_{len(rows)}.csv")
        crawleval("learn", "mirrorsync", "--runs", runs, "--json", js, "--curve", cv, *extra)
        with open(js) as f:
            j = json.load(f)
        with open(cv) as f:
            rows[mode] = (j, list(csv.DictReader(f)))
    md.append("| parameters | eps | eta | J after 240 rounds | regret [95% CI] | in-policy regret | "
              "exploration gap | Lemma 3 bound 2 eps U T | regret bound (Thm 5.1 + Lemma 3) |")
    md.append("|---|---|---|---|---|---|---|---|---|")
    for mode, (j, _) in rows.items():
        th = j.get("theory")
        bound = f"{th['regret_bound']:.0f} (paper's Corollary 1: {th['paper_regret_bound']:.0f})" \
            if th else "none (eta >= K eps / (2 U))"
        md.append(f"| {mode} | {j['epsilon']:.3f} | {j['learning_rate']:.3f} | {j['final_mean_j']:.4f} | "
                  f"{j['regret']:.2f} [{j['regret_ci95'][0]:.2f}, {j['regret_ci95'][1]:.2f}] | "
                  f"{j['in_policy_regret']:.2f} | {j['exploration_gap']:.2f} | "
                  f"{j['exploration_gap_bound']:.0f} | {bound} |")
    md.append("")
    fig, (ax, lx) = plt.subplots(1, 2, figsize=(13, 4.4))
    for mode, (j, rs) in rows.items():
        x = [float(r["round"]) for r in rs]
        reg = [float(r["regret_mean"]) for r in rs]
        line, = ax.plot(x, reg, label=f"{mode}: regret")
        ax.fill_between(x, [float(r["regret_ci95_low"]) for r in rs],
                        [float(r["regret_ci95_high"]) for r in rs], alpha=0.25)
        ax.plot(x, [float(r["in_policy_regret_mean"]) for r in rs], ls="--",
                label=f"{mode}: in-policy regret")
        pts = [(t, y) for t, y in zip(x, reg) if t >= j["regret_fit_from_round"] and y > 0]
        lx.loglog([t for t, _ in pts], [y for _, y in pts], color=line.get_color(), label=mode)
        b = j["regret_exponent"]
        # The fitted line: least squares on log-log, the intercept at the points' mean.
        mt = sum(math.log(t) for t, _ in pts) / len(pts)
        my = sum(math.log(y) for _, y in pts) / len(pts)
        lx.loglog([pts[0][0], pts[-1][0]], [math.exp(my + b * (math.log(t) - mt))
                                            for t in (pts[0][0], pts[-1][0])],
                  color=line.get_color(), ls=":", lw=2, label=f"fit: rounds^{b:.2f}")
        if mode.startswith("tuned"):
            t_end, y_end = pts[-1]
            lx.loglog([pts[0][0], t_end], [y_end * (pts[0][0] / t_end) ** (2 / 3), y_end],
                      color="k", ls="--", lw=1, label="rounds^(2/3) (Corollary 1's rate)")
    ax.set_xlabel("MirrorSync rounds")
    ax.set_ylabel("cumulative regret (rounds x J)")
    ax.set_title("MirrorSync, polynomial costs: regret against the best fixed rates")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    lx.set_xlabel("MirrorSync rounds (log)")
    lx.set_ylabel("cumulative regret (log)")
    lx.set_title(f"growth from round {rows['tuned (eta 2.7, eps 0.05)'][0]['regret_fit_from_round']:g}: "
                 "fitted exponents")
    lx.legend(fontsize=8)
    lx.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(os.path.join(DOCS, "fig_regret.png"), dpi=110)
    plt.close(fig)
    md.append("![MirrorSync regret](fig_regret.png)\n")
    jt = rows["theory (Corollary 1, U = 40)"][0]
    jtu = rows["tuned (eta 2.7, eps 0.05)"][0]
    def slope(rs, column):  # least squares on log-log from the JSON's fit round, as the engine's
        pts = [(math.log(float(r["round"])), math.log(float(r[column]))) for r in rs
               if float(r["round"]) >= jtu["regret_fit_from_round"] and float(r[column]) > 0]
        mx = sum(x for x, _ in pts) / len(pts)
        my = sum(y for _, y in pts) / len(pts)
        return (sum((x - mx) * (y - my) for x, y in pts) /
                sum((x - mx) ** 2 for x, _ in pts))

    tuned_rows = rows["tuned (eta 2.7, eps 0.05)"][1]
    theory_rows = rows["theory (Corollary 1, U = 40)"][1]
    md.append(f"**The regret's growth.** A least-squares line on log regret against log rounds, from "
              f"round {jtu['regret_fit_from_round']:g} to 240 (`regret_exponent` in the JSON), gives "
              f"regret ~ rounds^{jtu['regret_exponent']:.2f} with the tuned parameters and "
              f"rounds^{jt['regret_exponent']:.2f} with the theory's, against Corollary 1's "
              "O(T^(2/3)) (right panel, dashed). The regret has two parts. The exploration gap is a "
              "constant per round (J*_eps - J*), so it grows linearly: "
              f"{100 * jtu['exploration_gap'] / jtu['regret']:.0f}% of the tuned run's final regret "
              f"and {100 * jt['exploration_gap'] / jt['regret']:.0f}% of the theory run's. The "
              "in-policy regret alone grows as rounds^"
              f"{slope(tuned_rows, 'in_policy_regret_mean'):.2f} (tuned) and rounds^"
              f"{slope(theory_rows, 'in_policy_regret_mean'):.2f} (theory). Corollary 1's rate is a "
              "bound for eps and eta chosen for the horizon T (eps = T^(-1/3) L^(1/3)); at a fixed "
              "eps the linear exploration gap makes the regret linear in the long run, so an exponent "
              "measured at one horizon with fixed parameters describes this run and does not test "
              "the rate.\n")
    md.append("The measured regrets are two orders of magnitude below the bounds, which hold with "
              "room to spare; the theory's parameters (eps about 0.23) spend far more on probes than "
              "the tuned ones and end with a higher regret, as their exploration gap shows. Lemma 3's "
              "bound is also checked on generated and identical-arm instances "
              "(`SyncBandit.ExplorationGapObeysLemmaThree`). **A correction of the paper:** with "
              "Corollary 1's eps and eta, Theorem 5.1's in-policy bound and Lemma 3's gap bound are "
              "each 2 U T^(2/3) L^(1/3), so the regret bound their sum gives is 4 U T^(2/3) L^(1/3); "
              f"Corollary 1 prints 3 U T^(2/3) L^(1/3) ({jt['theory']['paper_regret_bound']:.0f} here "
              f"against {jt['theory']['regret_bound']:.0f}; `SyncBandit.TheoryParametersAreCorollary"
              "Ones`).\n")
    # Round-varying costs: half the arms' scales swap with the other half's at round 121.
    base = os.path.join(TMP, "sync_instance.csv")
    crawleval("syncbandit", "generate", "--family", "polynomial", "--arms", 100, "--seed", 7,
              "--out", base)
    with open(base) as f:
        arms = list(csv.DictReader(f))
    rc = os.path.join(TMP, "round_costs.csv")
    with open(rc, "w") as f:
        f.write("round,arm,mu,p\n")
        for k, a in enumerate(arms):
            f.write(f"1,{k},{a['mu']},{a['p']}\n")
        for k, a in enumerate(arms):
            f.write(f"121,{k},{arms[(k + 50) % 100]['mu']},{a['p']}\n")
    js = os.path.join(TMP, "nonstationary.json")
    cv = os.path.join(TMP, "nonstationary.csv")
    crawleval("learn", "mirrorsync", "--round-costs", rc, "--runs", runs, "--json", js, "--curve", cv)
    with open(js) as f:
        jn = json.load(f)
    md.append(f"Round-varying costs (`--round-costs FILE`: round,arm,mu,p; round 1 gives every arm, "
              f"later rounds the changes): a generated instance whose arms' cost scales are exchanged "
              f"between halves at round 121. MirrorSync's regret against the best fixed rates for the "
              f"whole sequence after 240 rounds is {jn['regret']:.2f} [{jn['regret_ci95'][0]:.2f}, "
              f"{jn['regret_ci95'][1]:.2f}] ({runs} runs of the same sequence; the adversarial "
              "setting of section 5 with an oblivious adversary).\n")
    # The pseudo-code's rules against crawleval's.
    md.append("### MirrorSync and AsyncMirrorSync as printed\n")
    md.append("crawleval departs from the paper's pseudo-code in three places (`include/crawleval/learn/"
              "syncbandit.hpp`, `LearnConfig`); each is selectable, so both readings run on the "
              "paper's experiment (K = 100, B = 40, 240 rounds, the tuned rates and cycles, "
              f"{runs} runs):\n")
    md.append("- `--gradient first`: Algorithm 1 as printed keeps the first gradient sample of a round "
              "(lines 14-18, the `break`); crawleval averages every sample of the round (each is "
              "unbiased by Lemma 2, so the mean is too, with less variance), as Algorithm 2's line 30 "
              "does;")
    md.append("- `--local-budget paper`: Algorithm 2's line 35 gives the updated arms the bandwidth "
              "sum_A r_k / (1 + eps); the rates already live in K_eps, so this shrinks the total at "
              "every update (crawleval, as the authors' public code: sum_A r_k). Where the total falls "
              "below |A| r_min, which no rates can meet, crawleval uses |A| r_min;")
    md.append("- `--reschedule paper`: lines 37-40 reschedule every arm, not only the updated ones, "
              "with its next sync at max(t_prev + 1/r_k, now) (now with probability eps), an interval "
              "without a probe whose gradient sample is 0; crawleval, as the public code, reschedules "
              "the updated arms' interval in progress and draws no sample from it.\n")
    md.append("| costs | algorithm | rules | J after 240 rounds [95% CI] | gap to J*_eps | regret [95% CI] |")
    md.append("|---|---|---|---|---|---|")
    variants = [("mirrorsync", "mean", "crawleval (the mean of a round's samples)", []),
                ("mirrorsync", "first", "Algorithm 1 as printed (the first sample)",
                 ["--gradient", "first"]),
                ("async-mirrorsync", "code", "crawleval (the public code's)", []),
                ("async-mirrorsync", "budget", "line 35 as printed", ["--local-budget", "paper"]),
                ("async-mirrorsync", "resched", "lines 37-40 as printed", ["--reschedule", "paper"]),
                ("async-mirrorsync", "both", "Algorithm 2 as printed (both)",
                 ["--local-budget", "paper", "--reschedule", "paper"]),
                ("async-psgd", "code", "crawleval (the public code's)", []),
                ("async-psgd", "both", "lines 35, 37-40 as printed",
                 ["--local-budget", "paper", "--reschedule", "paper"])]
    literal = {}
    for fam in ("polynomial", "poisson"):
        for alg, key, label, extra in variants:
            js = os.path.join(TMP, f"rules_{fam}_{alg}_{key}.json")
            crawleval("learn", alg, "--family", fam, "--runs", runs, "--json", js, *extra)
            with open(js) as f:
                jv = json.load(f)
            literal[(fam, alg, key)] = jv
            gap = 100 * (jv["final_mean_j"] / jv["j_star_epsilon"] - 1)
            md.append(f"| {fam} | {alg} | {label} | {jv['final_mean_j']:.4f} [{jv['final_ci95'][0]:.4f}, "
                      f"{jv['final_ci95'][1]:.4f}] | {gap:.2f}% | {jv['regret']:.2f} "
                      f"[{jv['regret_ci95'][0]:.2f}, {jv['regret_ci95'][1]:.2f}] |")
    # The first sample is noisier: the tuned learning rate is the mean's; its own best on a grid.
    grid = (0.3, 0.7, 1.35, 2.7, 5.4)
    best_first = {}
    for fam in ("polynomial", "poisson"):
        for eta in grid:
            js = os.path.join(TMP, f"first_{fam}_{eta}.json")
            crawleval("learn", "mirrorsync", "--family", fam, "--runs", runs, "--gradient", "first",
                      "--learning-rate", eta, "--json", js)
            with open(js) as f:
                jv = json.load(f)
            if fam not in best_first or jv["final_mean_j"] < best_first[fam][1]["final_mean_j"]:
                best_first[fam] = (eta, jv)
        eta, jv = best_first[fam]
        gap = 100 * (jv["final_mean_j"] / jv["j_star_epsilon"] - 1)
        md.append(f"| {fam} | mirrorsync | Algorithm 1 as printed, its best learning rate of "
                  f"{', '.join(f'{g:g}' for g in grid)} ({eta:g}) | {jv['final_mean_j']:.4f} "
                  f"[{jv['final_ci95'][0]:.4f}, {jv['final_ci95'][1]:.4f}] | {gap:.2f}% | "
                  f"{jv['regret']:.2f} [{jv['regret_ci95'][0]:.2f}, {jv['regret_ci95'][1]:.2f}] |")
    md.append("")

    def gap_of(fam, alg, key):
        jv = literal[(fam, alg, key)]
        return 100 * (jv["final_mean_j"] / jv["j_star_epsilon"] - 1)

    def best_gap(fam):
        jv = best_first[fam][1]
        return 100 * (jv["final_mean_j"] / jv["j_star_epsilon"] - 1)

    md.append("Keeping only the first sample leaves MirrorSync "
              f"{gap_of('polynomial', 'mirrorsync', 'first'):.2f}% above J*_eps against "
              f"{gap_of('polynomial', 'mirrorsync', 'mean'):.2f}% with the mean at the tuned learning "
              f"rate (poisson: {gap_of('poisson', 'mirrorsync', 'first'):.2f}% against "
              f"{gap_of('poisson', 'mirrorsync', 'mean'):.2f}%), and {best_gap('polynomial'):.2f}% "
              f"({best_gap('poisson'):.2f}%) at its own best rate of the grid: the estimate is "
              "unbiased either way, but a round's first interval carries a probe with probability "
              "eps only, so the first sample is 0 in 95% of the rounds and the step is far noisier "
              "than the mean over every interval of the round. Algorithm 2 as printed does not "
              "learn: line 35 hands the "
              "updated arms (1 + eps)^-1 of their bandwidth at every update, so the rates' sum decays "
              "towards K r_min and the cost rises to "
              f"{literal[('polynomial', 'async-mirrorsync', 'both')]['final_mean_j']:.4f} (polynomial) "
              f"from the start's {literal[('polynomial', 'async-mirrorsync', 'code')]['curve']['mean_j'][0]:.4f}; "
              "the rescheduling of lines 37-40 alone changes little (it ends "
              f"{gap_of('polynomial', 'async-mirrorsync', 'resched'):.2f}% above J*_eps against "
              f"{gap_of('polynomial', 'async-mirrorsync', 'code'):.2f}%: its zero samples shrink "
              "the averaged steps, and its reschedules cost a few syncs). Only the public code's "
              "rules reach the paper's figures, and crawleval keeps them.\n")

    # LSPE
    md.append("### LSPE(0): the exact threshold, the untrained baseline, the bound at its crawl rate\n")
    md.append("The learning paper's policy crawls source i when x_i exceeds a threshold T_i(x_-i); the "
              "Whittle policy's exact threshold is gamma_i^-1(max_j!=i gamma_j(x_j)) (section III). "
              "`learn lspe --trace` writes the learned and the exact threshold at every step; the "
              "untrained policy (the starting thresholds kept, same draws) is the baseline that says "
              "what learning adds; and because the randomised policy's budget holds only on average, "
              "the fair bound is the Lagrangian bound at its realised crawl rate. The paper does not "
              f"say where the thresholds start; `--start-thresholds s` puts them at u_i + s (u*_i - "
              f"u_i). {reps_l} replications of 10^4 steps each:\n")
    md.append("| start s | learned, mean reward | untrained | crawls per step | bound at that rate | "
              "threshold distance (/ u*) |")
    md.append("|---|---|---|---|---|---|")
    trace_path = os.path.join(TMP, "lspe_trace.csv")
    for start in (0.0, 0.25, 0.5, 0.75, 1.0):
        js = os.path.join(TMP, f"lspe_{start}.json")
        extra = ["--trace", trace_path] if start == 0.5 else []
        crawleval("learn", "lspe", "--paper-example", "--replications", reps_l, "--start-thresholds",
                  start, "--json", js, *extra)
        with open(js) as f:
            lj = json.load(f)
        md.append(f"| {start:g} | {lj['mean_reward']:.1f} [{lj['ci95'][0]:.1f}, {lj['ci95'][1]:.1f}] | "
                  f"{lj['untrained_mean_reward']:.1f} [{lj['untrained_ci95'][0]:.1f}, "
                  f"{lj['untrained_ci95'][1]:.1f}] | {lj['mean_crawls_per_step']:.2f} | "
                  f"{lj['budget_matched_bound']:.1f} | {lj['threshold_gap']:.2f} |")
    md.append("")
    with open(trace_path) as f:
        tr = list(csv.DictReader(f))
    fig, ax = plt.subplots(figsize=(9, 4.2))
    for sid, color in (("1", "C0"), ("2", "C1")):
        rs = [r for r in tr if r["source"] == sid]
        step = [int(r["step"]) for r in rs]
        win = 100
        def smooth(v):
            return [sum(v[k:k + win]) / len(v[k:k + win]) for k in range(0, len(v), win)]
        xs = step[::win]
        ax.plot(xs, smooth([float(r["learned"]) for r in rs]), color=color,
                label=f"source {sid}: learned threshold")
        ax.plot(xs, smooth([float(r["exact"]) for r in rs]), color=color, ls="--",
                label=f"source {sid}: exact (Whittle) threshold")
    ax.set_xlabel("step (means over 100 steps)")
    ax.set_ylabel("threshold")
    ax.set_title("LSPE(0), replication 0, start s = 0.5: learned against exact thresholds")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(DOCS, "fig_lspe_thresholds.png"), dpi=110)
    plt.close(fig)
    md.append("![LSPE thresholds](fig_lspe_thresholds.png)\n")
    md.append("Where the thresholds start decides the result, and learning mostly does not improve "
              "on the untrained start: the learned thresholds do not approach the exact ones (the "
              "distance column, and the figure).\n")
    # "About 160 at about one crawl per step": every start, both critics, both operating rules.
    reps_scan = max(4, reps_l // 2)
    md.append("**\"About 160 at about one crawl per step\" (section V).** The paper gives no start "
              "for the thresholds; this scan runs every start s from 0 to 1 in steps of 0.1, with "
              f"both critics, {reps_scan} replications of 10^4 steps each (randomised rule: the "
              "paper's experiment), and the top-1 rule (exactly one crawl a step; it draws nothing "
              "in the deterministic model, so one replication is the run):\n")
    starts = [round(0.1 * k, 1) for k in range(11)]
    scan = {}
    for critic in ("crawled", "paper"):
        for operating in ("randomised", "top"):
            for start in starts:
                js = os.path.join(TMP, f"scan_{critic}_{operating}_{start}.json")
                crawleval("learn", "lspe", "--paper-example", "--replications",
                          reps_scan if operating == "randomised" else 1,
                          "--start-thresholds", start, "--critic", critic, "--operating", operating,
                          "--json", js)
                with open(js) as f:
                    scan[(critic, operating, start)] = json.load(f)
    md.append("| start s | crawled critic: crawls per step | reward | paper's critic: crawls per step "
              "| reward | top 1, crawled critic | top 1, paper's critic |")
    md.append("|---|---|---|---|---|---|---|")
    for start in starts:
        a, b = scan[("crawled", "randomised", start)], scan[("paper", "randomised", start)]
        ta, tb = scan[("crawled", "top", start)], scan[("paper", "top", start)]
        md.append(f"| {start:g} | {a['mean_crawls_per_step']:.2f} | {lspe_ci(a)} | "
                  f"{b['mean_crawls_per_step']:.2f} | {lspe_ci(b)} | "
                  f"{ta['mean_reward']:.1f} | {tb['mean_reward']:.1f} |")
    md.append("")
    rand_near = [(k, v) for k, v in scan.items()
                 if k[1] == "randomised" and 0.9 <= v["mean_crawls_per_step"] <= 1.1]
    rand_hits = [(k, v) for k, v in rand_near if 150 <= v["mean_reward"] <= 170]
    tops = [(k, v) for k, v in scan.items() if k[1] == "top"]
    top_hits = [(k, v) for k, v in tops if 150 <= v["mean_reward"] <= 170]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for (critic, operating), mk in ((("crawled", "randomised"), "o"), (("paper", "randomised"), "s"),
                                    (("crawled", "top"), "^"), (("paper", "top"), "v")):
        pts = [scan[(critic, operating, st)] for st in starts]
        err = [[p["mean_reward"] - (p["ci95"][0] if p["ci95"][0] is not None else p["mean_reward"])
                for p in pts],
               [(p["ci95"][1] if p["ci95"][1] is not None else p["mean_reward"]) - p["mean_reward"]
                for p in pts]]
        ax.errorbar([p["mean_crawls_per_step"] for p in pts], [p["mean_reward"] for p in pts],
                    yerr=err, marker=mk, ls="-" if operating == "randomised" else "none",
                    capsize=2, label=f"{operating}, {critic} critic (s = 0..1)")
    ax.axvspan(0.9, 1.1, color="g", alpha=0.08, label="about one crawl per step (0.9-1.1)")
    ax.axhspan(150, 170, color="r", alpha=0.08, label="about 160 (150-170)")
    ax.plot([1.0], [160], "r*", ms=14, label="paper: about 160 at about one crawl")
    ax.set_xlabel("sources crawled per step")
    ax.set_ylabel("mean reward per step")
    ax.set_title("LSPE(0) on the 4-source example: every threshold start")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(DOCS, "fig_lspe_starts.png"), dpi=110)
    plt.close(fig)
    md.append("![LSPE over the threshold starts](fig_lspe_starts.png)\n")
    def listed(hits):
        return "; ".join(f"start {k[2]:g}, {k[0]} critic: {v['mean_reward']:.1f} at "
                         f"{v['mean_crawls_per_step']:.2f} crawls" for k, v in hits)

    text = ("Under the randomised rule (the paper's experiment) "
            + (f"about 160 (150-170) at about one crawl per step (0.9-1.1) comes from: "
               f"{listed(rand_hits)}. " if rand_hits else
               "no start and neither critic gives about 160 (150-170) at about one crawl per step "
               "(0.9-1.1): ")
            + (f"the {len(rand_near)} settings that crawl 0.9-1.1 a step earn "
               f"{min(v['mean_reward'] for _, v in rand_near):.1f} to "
               f"{max(v['mean_reward'] for _, v in rand_near):.1f}. " if rand_near else
               "no setting crawls 0.9-1.1 a step. ")
            + "The top-1 rule crawls exactly one source a step and its reward jumps from start to "
            f"start ({min(v['mean_reward'] for _, v in tops):.1f} to "
            f"{max(v['mean_reward'] for _, v in tops):.1f}); ")
    if top_hits:
        text += (f"about 160 comes from {listed(top_hits)}. So the pair \"about 160 at about one "
                 "crawl per step\" is met " + ("" if rand_hits else "only ") +
                 "by the operated top-1 rule " +
                 ("with the paper's critic as printed " if all(k[0] == "paper" for k, _ in top_hits)
                  else "") +
                 "at single starts whose neighbours earn far apart: one number matched by one free "
                 "choice (the start, which the paper does not give), as the 254.66 of section 1 is "
                 "matched by a horizon; a fit, not a reproduction.\n")
    else:
        text += ("none gives about 160. The paper's pair of figures is not reproduced by any start "
                 "of the thresholds with Table 1's sources and the report's xi.\n")
    md.append(text)
    return md


def relaxed_section():
    md = ["## 10. The relaxed problem's own policies\n"]
    md.append("The research report relaxes the per-epoch budget to its long-run average (eqs. 4-5) and "
              "prices it with a multiplier; the bound (sections 1, 3) is the relaxed problem's value. "
              "`crawleval relaxed` runs the relaxed problem's own policies "
              "(`include/crawleval/analysis/relaxed_policy.hpp`; Python `crawleval.relaxed_policy`). "
              "Under them the sources decouple (no top-M selection), so they are simulated source by "
              "source in the analysis layer, without the engines; deterministic model.\n")
    md.append("- **The average-budget policy** crawls every source whose index exceeds the bound's "
              "multiplier lambda*, i.e. at its relaxed period, and randomises at the multiplier's "
              "ties: a source whose period jumps at lambda* crawls with one probability p at the tied "
              "ages, p chosen so that the long-run spend is M exactly. Every cycle it uses is optimal "
              "in its relaxed problem at lambda*, so its long-run reward equals the bound (renewal-"
              "reward, computed exactly; tested against bound.cpp's fast path and reference to 1e-9, "
              "and by simulation). It meets the budget on average, not every epoch: the worst epoch "
              "below.")
    md.append("- **The online dual descent** (the slides' last slide: \"online dual descent type method "
              "for the relaxed control problem\", one line, no step size; the design is crawleval's): "
              "every epoch each source crawls when its index at its age exceeds lambda_t, and "
              "lambda_(t+1) = lambda_t exp(s (t + 1)^(-1/2) clip((S_t - M) / M, -1, 1)) with S_t "
              "the epoch's spend, s = 1 and lambda_0 half the largest x_cap / C: a stochastic "
              "subgradient step on the dual (whose derivative is M minus the crawl rate) taken in "
              "log lambda, because the multiplier's scale spans decades over a population (additive "
              "steps sized for the largest index overshot a synthetic population's lambda* a "
              "hundredfold).\n")
    reps = 10 if QUICK else 40
    epochs = 4000 if QUICK else 20000
    md.append(f"The average-budget policy: exact figures, and a simulation of {reps} replications of "
              f"{epochs} epochs after 1000 (the tie coins drawn per source and epoch), 95% CI:\n")
    md.append("| population | M | lambda* | tied sources, p | exact reward | bound | simulated reward | "
              "mean spend | worst epoch | epochs over M |")
    md.append("|---|---|---|---|---|---|---|---|---|---|")
    n_syn = 2000 if QUICK else 10000
    cases = [("4-source example", ["--paper-example"], m) for m in (1, 1.5, 2, 2.5, 3)]
    cases += [(f"synthetic, N = {n_syn}", ["--synthetic", n_syn], round(n_syn * f))
              for f in (0.01, 0.05)]
    results = []
    for name, src, m in cases:
        js = os.path.join(TMP, f"relaxed_{len(results)}.json")
        crawleval("relaxed", *src, "--budget", m, "--epochs", epochs, "--burn-in", 1000,
                  "--replications", reps, "--json", js)
        with open(js) as f:
            j = json.load(f)
        results.append((name, m, j))
        md.append(f"| {name} | {m:g} | {j['lambda']:.4f} | {j['tied']}, {j['tie_probability']:.4f} | "
                  f"{j['reward']:.4f} | {j['bound']:.4f} | {j['simulated_reward']:.3f} "
                  f"[{j['simulated_ci95'][0]:.3f}, {j['simulated_ci95'][1]:.3f}] | "
                  f"{j['simulated_spend']:.4f} | {j['worst_epoch_spend']:g} | "
                  f"{100 * j['over_budget_fraction']:.1f}% |")
    md.append("")
    worst_gap = max(abs(j["reward"] - j["bound"]) / j["bound"] for _, _, j in results)
    sim_gap = max(abs(j["simulated_reward"] / j["reward"] - 1) for _, _, j in results)
    spend_gap = max(abs(j["simulated_spend"] / m - 1) for _, m, j in results)
    md.append(f"The exact reward equals the bound in every row (largest relative difference "
              f"{worst_gap:.1e}); the simulated reward is within {100 * sim_gap:.3f}% of it and the "
              f"simulated spend within {100 * spend_gap:.3f}% of M (a finite window: a source with a "
              "long period is partway through a cycle at its ends, which the interval over the "
              "replications, about the coins only, does not cover). The price is the per-epoch "
              "budget. From empty sources every source with the same period crawls in the same "
              "epochs (nothing in the relaxed policy spreads them), so the worst epoch spends "
              "several times M (the column), and the example's fractional budgets need epochs above "
              "M; an index policy that meets M every epoch can fall short of the bound (section 1: "
              "the optimum 337.77 at M = 2 against the bound 338.05).\n")
    # The dual descent's convergence.
    curves = {}
    for key, src, m in (("example", ["--paper-example"], 2), ("synthetic", ["--synthetic", n_syn],
                                                             round(0.05 * n_syn))):
        cv = os.path.join(TMP, f"dual_{key}.csv")
        js = os.path.join(TMP, f"dual_{key}.json")
        crawleval("relaxed", *src, "--budget", m, "--epochs", epochs, "--replications", 1,
                  "--dual-descent", "--every", 10, "--curve", cv, "--json", js)
        with open(cv) as f:
            rows = list(csv.DictReader(f))
        with open(js) as f:
            curves[key] = (m, rows, json.load(f))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for ax, (key, title) in zip(axes, (("example", "4-source example, M = 2"),
                                       ("synthetic", f"synthetic N = {n_syn}, M = 5%"))):
        m, rows, j = curves[key]
        t = [float(r["epoch"]) + 1 for r in rows]
        ax.loglog(t, [float(r["lambda"]) for r in rows], lw=0.8, label="lambda_t")
        ax.axhline(j["lambda"], color="k", ls="--", label=f"offline lambda* = {j['lambda']:.3f}")
        ax.set_xlabel("epoch")
        ax.set_ylabel("multiplier")
        ax.set_title("online dual descent: " + title)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(os.path.join(DOCS, "fig_dual_descent.png"), dpi=110)
    plt.close(fig)
    md.append("![online dual descent](fig_dual_descent.png)\n")
    md.append(f"The online dual descent over {epochs} epochs (deterministic: no draws):\n")
    md.append("| population | M | lambda* | final lambda_t | mean lambda_t, second half | reward, "
              "second half | bound | spend, second half | worst epoch |")
    md.append("|---|---|---|---|---|---|---|---|---|")
    for key, name in (("example", "4-source example"), ("synthetic", f"synthetic, N = {n_syn}")):
        m, _, j = curves[key]
        d = j["dual_descent"]
        md.append(f"| {name} | {m:g} | {j['lambda']:.4f} | {d['final_lambda']:.4f} | "
                  f"{d['late_lambda_average']:.4f} | {d['late_reward']:.3f} | {j['bound']:.3f} | "
                  f"{d['late_spend']:.4f} | {d['late_worst_spend']:g} |")
    md.append("")
    worst_rel = max(abs(c[2]["dual_descent"]["final_lambda"] / c[2]["lambda"] - 1)
                    for c in curves.values())
    worst_reward = max(abs(c[2]["dual_descent"]["late_reward"] / c[2]["bound"] - 1)
                       for c in curves.values())
    md.append("Without knowing lambda*, the descent's multiplier ends within "
              f"{100 * worst_rel:.2f}% of it, and over the second half it spends M on average and "
              f"earns within {100 * worst_reward:.2f}% of the bound. With a deterministic threshold "
              "at each epoch (no coin) it meets the average budget by moving lambda_t back and "
              "forth across the multiplier, the online counterpart of the average-budget policy's "
              "coin; its worst epochs are those of the same synchronised periods.\n")
    return md


def corrections_section():
    return ["## 11. Corrections to earlier versions of this report\n",
            "What an audit of this report against the papers corrected, and where:\n",
            "- **The stochastic M = 2 figure** (section 1) was presented as \"like the papers' "
            "figures\", but source 1 is crawled in every epoch, where the papers say \"from time to "
            "time\". The section now says so, says why (Table 1's 250 arrivals per epoch make the "
            "content nearly deterministic) and shows the papers' pattern with rarer, larger arrivals.",
            "- **254.66** (section 1) is a fit: 61 epochs from empty sources is the horizon chosen to "
            "match it (60 gives 254.71). The text and the test (`PaperExample.Fit61EpochsFromEmpty"
            "SourcesGives254_66`, which also checks the neighbouring horizons) say so.",
            "- **\"No setting of the utility law changes that\"** (section 2) was true only of the two "
            "laws implemented then; with any law (section 6) heavier tails raise the Whittle policy's "
            "reward and reach the slides' 285.",
            "- **LSPE's reward** (section 5) was listed among the choices \"the paper leaves open\"; "
            "the paper specifies the sum of every X_i in its iterates, and crawleval's sum over the "
            "crawled sources is a correction of the paper (its objective counts crawled content).",
            "- **Content expiry's index** (section 4): the learning paper's eqs. 4-5 do give an index "
            "(Theorem 1's formula with u* (1 - alpha^E)); it now runs beside crawleval's "
            "(`--policy whittle_expiry_paper`) and the two are compared.",
            "- **\"Greedy loses 3-5%\"** (section 3): the text now states the range computed from the "
            "table (3.3-6.1% in the run that found the error).",
            "- **`learn lspe --help`** described `--kappa` as an exploration scale and `--gamma` as an "
            "exploration decay; they are the logit's slope and the critic's step size.",
            "- **\"The slides' 285, settled\"** (section 6): one lognormal sigma fitted to one number "
            "characterises the 285, it does not settle it (the slides state no law); the learning "
            "paper's 283 has the same status, and the sentence that compared it with the learner's "
            "start is gone (section 9 now scans the starts against the paper's ~160).",
            "- **The numerical index and section 7 of the report** (section 7): the report's \"the "
            "Whittle index is actually the same\" in the stochastic case is contradicted, with the "
            "differences and their cause (a deterministic time to the next crawl).",
            "- **Content expiry** (section 4, docs/model.md): \"the papers give no index for\" expiry "
            "was wrong (the learning paper's eqs. 4-5 give one); where that index earns more than "
            "crawleval's is now listed.",
            ""]



def main():
    os.makedirs(DOCS, exist_ok=True)
    reps = 50 if QUICK else 400
    md = []
    md.append("# Reproduction of the papers' experiments\n")
    md.append("Regenerated by `scripts/reproduce` (it installs matplotlib from Debian, builds crawleval "
              "and runs the commands below; "
              f"{'quick mode' if QUICK else 'full mode'}). Sources: `whittle-crawling-research-report.txt` "
              "(section 8, Table 1), `whittle-crawling-slides.txt` (stochastic experiment), "
              "`whittle-learning-lspe.txt` (belief observation, content expiry). Source ids are the "
              "papers' (1..4).\n")

    # ---- deterministic example ------------------------------------------------------------
    md.append("## 1. Deterministic model, the 4-source example (Table 1, T = 1)\n")
    md.append("Long-run mean reward per epoch (2000 epochs after 200 burn-in; deterministic: one "
              "replication, CI from 20 batch means). The exact optimum is relative value iteration "
              "over the joint ages (`crawleval optimal`); the bound is the Lagrangian relaxation "
              "(`crawleval bound`).\n")
    md.append("| M | " + " | ".join(POLICIES) + " | exact optimum | Lagrangian bound |")
    md.append("|---|" + "---|" * (len(POLICIES) + 2))
    paper_rows = {}
    for m in (1, 2, 3):
        j = run_json("--paper-example", "--budget", m, "--epochs", 2000, "--burn-in", 200,
                     "--policy", ",".join(POLICIES))
        o = optimal(m)
        paper_rows[m] = (j, o)
        vals = {p["name"]: p["mean_reward"] for p in j["policies"]}
        md.append(f"| {m} | " + " | ".join(f"{vals[p]:.2f}" for p in POLICIES) +
                  f" | {o['optimal_reward']:.2f} | {j['bound']['value']:.2f} |")
    o1 = paper_rows[1][1]
    o2 = paper_rows[2][1]
    md.append("")
    md.append(f"- M = 1: the Whittle policy crawls sources 1 and 2 alternately and reaches the exact "
              f"optimum {o1['optimal_reward']:.2f}; the bound equals it (the relaxation is tight). "
              "Crawling only source 1 gives u_1 = 179.79 per epoch, as in the paper.")
    md.append(f"- M = 2: optimum {o2['optimal_reward']:.2f} with the cycle "
              + "".join("{" + ",".join(map(str, s)) + "}" for s in o2["optimal_cycle"])
              + ": source 1 always, 2 and 3 irregularly, 4 rarely — the pattern the papers describe "
              "for their Figure 3.")

    # running average: the papers' 254.66
    tr_empty = trace(os.path.join(TMP, "t_empty.csv"), "--paper-example", "--budget", 1, "--epochs",
                     200, "--policy", "whittle", "--start", "empty")["whittle"]
    tr_fresh = trace(os.path.join(TMP, "t_fresh.csv"), "--paper-example", "--budget", 1, "--epochs",
                     200, "--policy", "whittle", "--start", "fresh")["whittle"]

    def running(rows):
        out = {}
        for r in rows:
            out[int(r["epoch"])] = float(r["running_average"])
        return [out[t] for t in sorted(out)]

    re_, rf = running(tr_empty), running(tr_fresh)
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(range(1, len(re_) + 1), re_, label="start empty (X = 0)")
    ax.plot(range(1, len(rf) + 1), rf, label="start fresh (X = u)")
    ax.axhline(254.66, color="gray", ls="--", label="paper: 254.66")
    ax.axhline(o1["optimal_reward"], color="k", ls=":", label=f"long run = optimum {o1['optimal_reward']:.2f}")
    ax.set_xlabel("epochs averaged (t = 0 .. H-1)")
    ax.set_ylabel("mean reward per epoch")
    ax.set_ylim(200, 275)
    ax.set_title("Whittle policy, M = 1: running average from a cold start")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(DOCS, "fig_running_average.png"), dpi=110)
    plt.close(fig)
    md.append(f"- The papers report 254.66 for the Whittle policy with M = 1, below its long-run value. "
              f"The papers give no horizon or start; the mean of a finite run from a cold start fits "
              f"it at one chosen horizon: from empty sources the mean of the first 61 epochs is "
              f"{re_[60]:.2f} (60 epochs: {re_[59]:.2f}, 62: {re_[61]:.2f}); from fresh sources "
              f"(X = u) the closest is {rf[15]:.2f} after 16 epochs. This is a fit of one number by "
              "one free choice (the horizon), consistent with the papers' figure but not a "
              "reproduction of it; `PaperExample.Fit61EpochsFromEmptySourcesGives254_66` asserts "
              "the fit and its neighbours.\n")
    md.append("![running average](fig_running_average.png)\n")
    # The research report's Fig. 1: an item's value xi_i exp(-mu_i t) over its age, with the
    # example's parameters as the binary holds them.
    ex_csv = os.path.join(TMP, "paper_example.csv")
    crawleval("convert", "--paper-example", "--out", ex_csv)
    with open(ex_csv) as f:
        ex_rows = list(csv.DictReader(f))
    fig, ax = plt.subplots(figsize=(7, 4))
    ts = [0.05 * k for k in range(201)]
    for r in ex_rows:
        xi, mu = float(r["xi"]), float(r["mu"])
        ax.plot(ts, [xi * math.exp(-mu * t) for t in ts],
                label=f"source {r['id']}: xi = {xi:g}, mu = {mu:g}")
    ax.set_xlabel("time since the item's arrival (epochs, T = 1)")
    ax.set_ylabel("value of an item, xi exp(-mu t)")
    ax.set_title("Content value as a function of time (research report, Fig. 1)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(DOCS, "fig_content_value.png"), dpi=110)
    plt.close(fig)
    md.append("The research report's Fig. 1, content value over time, from the model: an item of "
              "source i arriving with utility xi_i is worth xi_i exp(-mu_i t) after t (Table 1's "
              "parameters as `crawleval convert --paper-example` writes them). As the report says, "
              "sources 1 and 2 start high, 3 and 4 low, and 1 and 3 decay faster than 2 and 4:\n")
    md.append("![content value over time](fig_content_value.png)\n")

    state_figure(trace(os.path.join(TMP, "s1.csv"), "--paper-example", "--budget", 1, "--epochs", 31,
                       "--policy", "whittle")["whittle"],
                 "Whittle policy, deterministic model, M = 1 (papers' Fig. 2)",
                 os.path.join(DOCS, "fig_state_m1.png"))
    state_figure(trace(os.path.join(TMP, "s2.csv"), "--paper-example", "--budget", 2, "--epochs", 31,
                       "--policy", "whittle")["whittle"],
                 "Whittle policy, deterministic model, M = 2 (papers' Fig. 3)",
                 os.path.join(DOCS, "fig_state_m2.png"))
    s3 = trace(os.path.join(TMP, "s3.csv"), "--paper-example", "--budget", 2, "--epochs", 200,
               "--policy", "whittle", "--model", "stochastic")["whittle"]
    state_figure(s3, "Whittle policy, stochastic model (exponential utilities), M = 2 (papers' Fig. 4)",
                 os.path.join(DOCS, "fig_state_m2_stochastic.png"))
    rare_path = os.path.join(TMP, "rare.csv")
    with open(rare_path, "w") as f:
        f.write("id,lambda,xi,mu\n")
        for k, (xi, mu) in enumerate(((1.0, 0.7), (0.7, 0.35), (0.2, 0.7), (0.08, 0.21)), 1):
            f.write(f"{k},2.5,{xi * 100},{mu}\n")
    s4 = trace(os.path.join(TMP, "s4.csv"), "--sources", rare_path, "--budget", 2, "--epochs", 200,
               "--policy", "whittle", "--model", "stochastic")["whittle"]
    state_figure(s4, "Same, rarer and larger arrivals (Lambda = 2.5, xi x 100), M = 2",
                 os.path.join(DOCS, "fig_state_m2_stochastic_rare.png"))

    def crawl_share(rows):
        epochs = len({r["epoch"] for r in rows})
        return {sid: sum(1 for r in rows if r["source"] == sid and r["crawled"] == "1") / epochs
                for sid in ("1", "2", "3", "4")}

    c3, c4 = crawl_share(s3), crawl_share(s4)
    md.append("State evolution under the Whittle policy from empty sources (circles: crawled), "
              "after the papers' figures 2-4:\n")
    md.append("![M = 1](fig_state_m1.png)\n![M = 2](fig_state_m2.png)\n"
              "![M = 2 stochastic](fig_state_m2_stochastic.png)\n")
    md.append("The stochastic M = 2 figure differs from the papers' Figure 4: there, \"source 1 is "
              "crawled from time to time\"; here it is crawled in "
              f"{100 * c3['1']:.0f}% of the epochs (200 epochs; sources 2, 3, 4: "
              f"{100 * c3['2']:.0f}%, {100 * c3['3']:.0f}%, {100 * c3['4']:.0f}%). With Table 1's 250 "
              "arrivals per epoch a source's content after one epoch is within about 9% of u_1 = "
              "179.8, so source 1's index after one epoch, about (1 - alpha_1) u_1 = 90.5, is always "
              "among the top two, as in the deterministic model (whose optimal M = 2 cycle crawls "
              "source 1 every epoch, section 1). The papers' pattern needs epochs whose content varies "
              "far more: with rarer, larger arrivals of the same means (Lambda = 2.5, xi x 100) "
              f"source 1 is skipped in {100 * (1 - c4['1']):.0f}% of the epochs:\n")
    md.append("![M = 2 stochastic, rare arrivals](fig_state_m2_stochastic_rare.png)\n")

    # ---- stochastic experiment -------------------------------------------------------------
    md.append("## 2. The slides' stochastic experiment (M = 1)\n")
    md.append(f"Poisson arrivals (Table 1's rates), {reps} replications of 1000 epochs after 100 burn-in "
              "epochs, 95% CI over replications. `full`: the policy sees the true random states; "
              "`belief`: it sees only the expected state given the time since the last crawl. The "
              "slides' greedy baseline, \"crawl the largest lambda xi / mu (1 - exp(-mu T_lastcrawl))\", "
              "is greedy under belief.\n")
    md.append("| observation | utilities | " + " | ".join(POLICIES) + " | bound |")
    md.append("|---|---|" + "---|" * (len(POLICIES) + 1))
    for obs in ("full", "belief"):
        for util in ("exponential", "deterministic"):
            j = run_json("--paper-example", "--budget", 1, "--model", "stochastic", "--observe", obs,
                         "--utility", util, "--replications", reps, "--epochs", 1000, "--burn-in", 100,
                         "--policy", ",".join(POLICIES))
            vals = {p["name"]: ci(p) for p in j["policies"]}
            b = j["bound"]
            md.append(f"| {obs} | {util} | " + " | ".join(vals[p] for p in POLICIES) +
                      f" | {b['value']:.2f} |" if b.get("applicable") else
                      f"| {obs} | {util} | " + " | ".join(vals[p] for p in POLICIES) + " | n/a |")
    md.append("| slides | | 285 | 260 | 208 | | | |\n")
    md.append("Round robin (208.3) and the belief greedy baseline (260.4) reproduce the slides' 208 "
              "and 260. The slides' 285 for the Whittle index is **not reproduced** with Table 1's "
              "parameters: with 250 arrivals per epoch the epoch's content is close to its mean, the "
              "stochastic model behaves almost like the deterministic one, and every dynamic policy "
              "gets about 260.4 (the deterministic optimum is 260.39). No setting of the observation "
              "model changes that, and neither do the deterministic and exponential utility laws; "
              "heavier-tailed laws with Table 1's rates and means do (section 6 characterises the 285 by one fitted law; it does not settle it). "
              "The slides' pattern also appears when arrivals are rarer and larger with the same means "
              "(a sensitivity check, not a tuning of Table 1; in law it is Table 1's rates with a "
              "two-point utility law that thins the arrivals):\n")
    md.append("| arrivals per epoch, item utility | Whittle (full) | greedy (full) | greedy (belief) | round robin |")
    md.append("|---|---|---|---|---|")
    for scale in (1, 10, 100):
        path = os.path.join(TMP, f"bursty{scale}.csv")
        with open(path, "w") as f:
            f.write("id,lambda,xi,mu\n")
            for k, (xi, mu) in enumerate(((1.0, 0.7), (0.7, 0.35), (0.2, 0.7), (0.08, 0.21)), 1):
                f.write(f"{k},{250 / scale},{xi * scale},{mu}\n")
        full = run_json("--sources", path, "--budget", 1, "--model", "stochastic", "--replications",
                        reps, "--epochs", 1000, "--burn-in", 100, "--policy",
                        "whittle,greedy,round_robin", "--no-bound")
        bel = run_json("--sources", path, "--budget", 1, "--model", "stochastic", "--observe", "belief",
                       "--replications", reps, "--epochs", 1000, "--burn-in", 100, "--policy", "greedy",
                       "--no-bound")
        v = {p["name"]: ci(p) for p in full["policies"]}
        md.append(f"| Lambda = {250 / scale:g}, xi x {scale} | {v['whittle']} | {v['greedy']} | "
                  f"{ci(bel['policies'][0])} | {v['round_robin']} |")
    md.append("")

    # ---- reward vs budget --------------------------------------------------------------------
    md.append("## 3. Reward against budget, with the bound\n")
    n_syn = 20000 if QUICK else 100000
    fractions = [0.005, 0.01, 0.02, 0.05, 0.1, 0.2]
    curves = {p: [] for p in POLICIES}
    bounds = []
    for frac in fractions:
        j = run_json("--synthetic", n_syn, "--budget", int(n_syn * frac), "--epochs", 300, "--burn-in",
                     100, "--policy", ",".join(POLICIES), "--backend", "cpu")
        for p in j["policies"]:
            curves[p["name"]].append(p["mean_reward"])
        bounds.append(j["bound"]["value"])
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    ms = [1, 2, 3]
    ax = axes[0]
    for p in POLICIES:
        ax.plot(ms, [next(q["mean_reward"] for q in paper_rows[m][0]["policies"] if q["name"] == p)
                     for m in ms], marker="o", label=p)
    ax.plot(ms, [paper_rows[m][0]["bound"]["value"] for m in ms], "k--", label="Lagrangian bound")
    ax.plot(ms, [paper_rows[m][1]["optimal_reward"] for m in ms], "k:", marker="x", label="exact optimum")
    ax.set_xlabel("budget M (crawls per epoch)")
    ax.set_ylabel("mean reward per epoch")
    ax.set_title("Paper example, deterministic")
    ax.legend()
    ax.grid(alpha=0.3)
    ax = axes[1]
    for p in POLICIES:
        ax.plot([100 * f for f in fractions], curves[p], marker="o", label=p)
    ax.plot([100 * f for f in fractions], bounds, "k--", label="Lagrangian bound")
    ax.set_xscale("log")
    ax.set_xlabel("budget M / N (%)")
    ax.set_ylabel("mean reward per epoch")
    ax.set_title(f"Synthetic population, N = {n_syn}, deterministic")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(DOCS, "fig_reward_vs_budget.png"), dpi=110)
    plt.close(fig)
    md.append(f"Deterministic model; synthetic population (`--synthetic {n_syn}`, distributions in "
              "`include/crawleval/model/synthetic.hpp`), 300 epochs after 100 burn-in.\n")
    md.append("![reward vs budget](fig_reward_vs_budget.png)\n")
    md.append("| M / N | " + " | ".join(POLICIES) + " | bound | Whittle gap |")
    md.append("|---|" + "---|" * (len(POLICIES) + 2))
    for k, frac in enumerate(fractions):
        gap = (bounds[k] - curves["whittle"][k]) / bounds[k]
        md.append(f"| {100 * frac:g}% | " + " | ".join(f"{curves[p][k]:.1f}" for p in POLICIES) +
                  f" | {bounds[k]:.1f} | {100 * gap:.2f}% |")
    md.append("")
    loss = [100 * (curves["whittle"][k] - curves["greedy"][k]) / curves["whittle"][k]
            for k in range(len(fractions))]
    static_loss = max(100 * (curves["whittle"][k] - curves["static"][k]) / curves["whittle"][k]
                      for k in range(len(fractions)))
    md.append("The Whittle policy is within a few hundredths of a percent of the bound at every budget "
              "(many sources: the asymptotic optimality of index policies); a slightly negative gap is "
              "the finite window's start, which can add up to sum u* / H. The static schedule built from "
              f"the relaxation's periods is within {static_loss:.2f}% of it; greedy loses "
              f"{min(loss):.1f}-{max(loss):.1f}% (most at the smallest budgets); the state-blind "
              "policies are far behind. `static` is a proxy: the relaxation's periods, crawled on a "
              "fixed schedule. The static frequencies the research report compares with are those of "
              "Lefortier et al. (its ref. [15], CIKM 2013, arXiv 1307.6080); only that paper's "
              "abstract could be read from here, not its optimisation problem, so its own "
              "frequencies are not implemented and the proxy stands in for them.\n")

    # ---- expiry ------------------------------------------------------------------------------
    md.append("## 4. Content expiry (learning paper, section II)\n")
    md.append("Every source's content expires after E epochs; belief observation, stochastic model, "
              f"{reps} replications. `whittle` is crawleval's index, the deterministic expiry model's "
              "(Theorem 1's below age E, x_E / C from age E on; see docs/model.md); `whittle_expiry_paper` "
              "is the learning paper's (its eqs. 4-5: Theorem 1's formula with u_i = (1 - alpha_i)"
              "(1 - alpha_i^E) lambda_i / c_i, that is with u* replaced by x_E), run as a score function "
              "(`--policy whittle_expiry_paper`). Without expiry the two are the same index.\n")
    md.append("| M | E | whittle | whittle_expiry_paper | greedy | round_robin | static | bound |")
    md.append("|---|---|---|---|---|---|---|---|")
    expiry_rows = []
    for m in (1, 2):
        for e in (1, 2, 3, 5, "inf"):
            path = os.path.join(TMP, f"expiry{e}.csv")
            with open(path, "w") as f:
                f.write("id,lambda,xi,mu,expiry\n")
                for k, (xi, mu) in enumerate(((1.0, 0.7), (0.7, 0.35), (0.2, 0.7), (0.08, 0.21)), 1):
                    f.write(f"{k},250,{xi},{mu},{e}\n")
            j = run_json("--sources", path, "--budget", m, "--model", "stochastic", "--observe",
                         "belief", "--replications", reps, "--epochs", 1000, "--burn-in", 100,
                         "--policy", "whittle,whittle_expiry_paper,greedy,round_robin,static")
            v = {p["name"]: ci(p) for p in j["policies"]}
            expiry_rows.append((m, e, {p["name"]: p["mean_reward"] for p in j["policies"]},
                                {p["name"]: p for p in j["policies"]}))
            md.append(f"| {m} | {e} | {v['whittle']} | {v['whittle_expiry_paper']} | {v['greedy']} | "
                      f"{v['round_robin']} | {v['static']} | {j['bound']['value']:.2f} |")
    md.append("")
    diffs = [(m, e, r["whittle"] - r["whittle_expiry_paper"]) for m, e, r, _ in expiry_rows]
    worst = max(diffs, key=lambda d: abs(d[2]))

    def disjoint(a, b):
        return a["ci95_low"] is not None and b["ci95_low"] is not None and (
            a["ci95_low"] > b["ci95_high"] or b["ci95_low"] > a["ci95_high"])

    paper_wins = [(m, e, full["whittle_expiry_paper"], full["whittle"]) for m, e, r, full in expiry_rows
                  if r["whittle_expiry_paper"] > r["whittle"] and
                  disjoint(full["whittle_expiry_paper"], full["whittle"])]
    ours_win = [(m, e) for m, e, r, full in expiry_rows
                if r["whittle"] > r["whittle_expiry_paper"] and
                disjoint(full["whittle_expiry_paper"], full["whittle"])]
    md.append("The two indices rank the sources differently only at ages below E, where the paper's "
              "index values a source as if its content would grow towards x_E (not u*); the largest "
              f"difference in mean reward here is {worst[2]:+.2f} (M = {worst[0]}, E = {worst[1]}, "
              "crawleval's minus the paper's). With Table 1's parameters both are at the bound wherever "
              "the bound is tight. " +
              ("**Where the paper's index beats crawleval's**: " + "; ".join(
                  f"M = {m}, E = {e}: {ci(a)} against {ci(b)}" for m, e, a, b in paper_wins) +
               " (95% intervals disjoint). Both are index heuristics for the coupled problem "
               "(crawleval's is the Whittle index of the deterministic expiry model's relaxation), "
               "and neither dominates: crawleval's earns more, intervals disjoint, at " +
               (", ".join(f"M = {m}, E = {e}" for m, e in ours_win) or "no setting") + ".\n"
               if paper_wins else
               "The paper's index beats crawleval's, intervals disjoint, at no setting of this table; "
               "crawleval's earns more, intervals disjoint, at " +
               (", ".join(f"M = {m}, E = {e}" for m, e in ours_win) or "no setting") + ".\n"))
    # ---- learning ----------------------------------------------------------------------------
    md.append("## 5. Learning schedulers\n")
    md.append("### MirrorSync, AsyncMirrorSync and AsyncPSGDSync (synchronization bandits)\n")
    runs = 30 if QUICK else 150
    md.append(f"The experiments of Kolobov, Bubeck & Zimmert: K = 100 arms, B = 40, r_min = 0.025, "
              f"epsilon = 0.05, 240 MirrorSync rounds, {runs} runs (a fresh generated instance per "
              "run: `crawleval syncbandit generate` writes one as CSV), the public code's learning rates "
              "and update cycles. Mean policy cost J with its 95% CI over runs; the dashed line is "
              "J*_eps, the optimum over K_eps (rates scaled by 1/(1+eps)), which the learners can "
              "reach and the public code plots.\n")
    curves = {}
    for fam in ("polynomial", "poisson"):
        for alg in ("mirrorsync", "async-mirrorsync", "async-psgd"):
            path = os.path.join(TMP, f"{fam}-{alg}.csv")
            crawleval("learn", alg, "--family", fam, "--runs", runs, "--curve", path)
            with open(path) as f:
                curves[(fam, alg)] = list(csv.DictReader(f))
    figs = [("polynomial", ("mirrorsync", "async-mirrorsync"), 1),
            ("polynomial", ("async-mirrorsync", "async-psgd"), 2),
            ("poisson", ("mirrorsync", "async-mirrorsync"), 3),
            ("poisson", ("async-mirrorsync", "async-psgd"), 4)]
    for fam, algs, number in figs:
        fig, ax = plt.subplots(figsize=(7, 4))
        for alg in algs:
            rows = curves[(fam, alg)]
            x = [float(r["round"]) for r in rows]
            m = [float(r["mean_j"]) for r in rows]
            ax.plot(x, m, label=alg)
            ax.fill_between(x, [float(r["ci95_low"]) for r in rows],
                            [float(r["ci95_high"]) for r in rows], alpha=0.25)
        ax.axhline(float(curves[(fam, algs[0])][0]["j_star_epsilon"]), color="k", ls="--",
                   label="J*_eps")
        ax.set_xlabel("MirrorSync rounds (1/r_min time units each)")
        ax.set_ylabel("policy cost J")
        ax.set_title(f"{fam} costs (paper's Fig. {number})")
        ax.legend()
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(os.path.join(DOCS, f"fig_learning_{number}.png"), dpi=110)
        plt.close(fig)
    md.append("| costs | algorithm | J after 240 rounds | 95% CI | J*_eps | gap | J* (Problem 1) |")
    md.append("|---|---|---|---|---|---|---|")
    for fam in ("polynomial", "poisson"):
        for alg in ("mirrorsync", "async-mirrorsync", "async-psgd"):
            last = curves[(fam, alg)][-1]
            j, js = float(last["mean_j"]), float(last["j_star_epsilon"])
            md.append(f"| {fam} | {alg} | {j:.4f} | [{float(last['ci95_low']):.4f}, "
                      f"{float(last['ci95_high']):.4f}] | {js:.4f} | {100 * (j / js - 1):.2f}% | "
                      f"{float(last['j_star']):.4f} |")
    md.append("")
    md.append("The public code's single seed-0 run of the polynomial experiment reports J* = 0.518 and "
              "MirrorSync 0.522 after 240 rounds (0.8% above); its instances come from numpy's random "
              "generator, ours from Philox, so the instances differ but the relative gaps are the same. "
              "As in the paper, the asynchronous variant matches MirrorSync without its free resets, and "
              "mirror descent and projected SGD end at similar costs.\n")
    for number in (1, 2, 3, 4):
        md.append(f"![learning figure {number}](fig_learning_{number}.png)")
    md.append("")
    md.append("### The LSPE(0) Whittle learner (learning paper, section V)\n")
    lspe_path = os.path.join(TMP, "lspe.json")
    reps_l = 8 if QUICK else 40
    crawleval("learn", "lspe", "--paper-example", "--replications", reps_l, "--json", lspe_path)
    with open(lspe_path) as f:
        lj = json.load(f)
    variants = {}
    for operating in ("randomised", "top"):
        for critic in ("crawled", "paper"):
            if (operating, critic) == ("randomised", "crawled"):
                variants[(operating, critic)] = lj
                continue
            path = os.path.join(TMP, f"lspe_{operating}_{critic}.json")
            crawleval("learn", "lspe", "--paper-example", "--replications", reps_l, "--operating",
                      operating, "--critic", critic, "--json", path)
            with open(path) as f:
                variants[(operating, critic)] = json.load(f)
    md.append(f"The 4-source example, kappa = 2 (the logit's slope), gamma = 0.05 (the critic's step), "
              f"10^4 steps, {reps_l} replications. The choices the paper leaves open are listed in "
              "`include/crawleval/learn/lspe.hpp`; two are settled here by running both readings.\n")
    md.append("- **The critic's reward.** The paper's iterates for eta and b use sum_i X_i(n) over "
              "every source, crawled or not (its eqs. 6-8 and section IV), which contradicts its own "
              "objective (section II: the crawled content, sum_i X_i nu_i). crawleval's critic uses "
              "the utility crawled (`--critic crawled`, the default); `--critic paper` runs the "
              "iterates as printed, so the correction is measured below, not only stated.")
    md.append("- **The operating policy.** The paper learns with a randomised rule (each source crawled "
              "with its logit probability f_i, independently) and calls it \"purely an approximation "
              "for analytic purposes\": the policy it operates \"deterministically picks at each time "
              "the N_0 sites to crawl\". `--operating top --top N0` crawls exactly the N0 sources with "
              "the largest margin x_i - T_i over their learned thresholds, and learns from those "
              "transitions with the logit's likelihood ratio, as an online scheme must. The paper's "
              "numbers come from the randomised rule: \"we have on average one arm sampled\" and "
              "\"the choice of kappa controls the average value and dispersion of the number of "
              "engaged arms\" describe it (the top rule crawls exactly N0, with no dispersion). "
              "The tables of this report use the randomised rule unless they say otherwise.\n")
    md.append("| operating policy | critic | mean reward per step | second half | crawls per step | "
              "untrained (same start) | Whittle, known parameters, same budget |")
    md.append("|---|---|---|---|---|---|---|")
    for (operating, critic), v in variants.items():
        name = "randomised (the paper's experiment)" if operating == "randomised" else "top 1 (operated)"
        md.append(f"| {name} | {critic} | {lspe_ci(v)} "
                  f"| {v['mean_reward_second_half']:.1f} | {v['mean_crawls_per_step']:.2f} | "
                  f"{v['untrained_mean_reward']:.1f} | {v['whittle_known_parameters_top']:.2f} |")
    md.append("| paper | sum_i X_i | about 160 | | about 1 | | 283 |")
    md.append("")
    d_rand = variants[("randomised", "crawled")]["mean_reward"] - variants[("randomised", "paper")]["mean_reward"]
    d_top = variants[("top", "crawled")]["mean_reward"] - variants[("top", "paper")]["mean_reward"]
    md.append(f"Against the paper's critic the corrected one earns {d_rand:+.1f} per step under the "
              f"randomised rule and {d_top:+.1f} under the top rule (at this start; section 9 has every "
              "start). The correction makes the critic estimate the objective's value; the actor "
              "follows the critic's value estimates, and which critic steers the thresholds to a "
              "higher reward from a given start is an empirical matter the table answers, not what "
              "the correction is about. The learner stays numerically stable "
              "(projected thresholds, Tikhonov-regularised inverse); its reward depends on where the "
              "thresholds start, which the paper does not give (section 9 scans the starts). The "
              "paper's 283 for the Whittle policy is not the deterministic model's 260.39; section 6 "
              "characterises it.\n")
    # Table I of the learning paper has no xi: the reading that takes xi = 1.
    xi1 = write_sources("lspe_table1_xi1.csv", [(250.0, 1.0, mu) for _, mu in TABLE1])
    j_xi1 = run_json("--sources", xi1, "--budget", 1, "--epochs", 2000, "--burn-in", 200, "--policy",
                     "whittle", "--no-bound")
    w_xi1 = j_xi1["policies"][0]["mean_reward"]
    u_rep = [250 * xi * (1 - math.exp(-mu)) / mu for xi, mu in TABLE1]
    u_one = [250 * (1 - math.exp(-mu)) / mu for _, mu in TABLE1]
    best_rep = sorted(u_rep, reverse=True)
    md.append("**Table I has no xi.** The learning paper's Table I gives lambda_i = 250 and the decay "
              "rates c_i = 0.7, 0.35, 0.7, 0.21 and no item utility; its u_i = (1 - alpha_i)(1 - "
              "alpha_i^M_i) lambda_i / c_i has none either, which reads as xi_i = 1. crawleval uses "
              "the research report's xi = 1.0, 0.7, 0.2, 0.08 (Table 1 there, \"the same numerical "
              "example as in [2]\", the paper says), because only they agree with the paper's own "
              "sentences. With xi = 1 crawling one source forever earns u = "
              + ", ".join(f"{u:.1f}" for u in u_one) + ", so no reward of about 160 lies \"between "
              "the rewards that we could get by sampling constantly either the best or the second "
              f"best arm\" ({max(u_one):.1f} and {sorted(u_one)[-2]:.1f}), and the Whittle policy with "
              f"M = 1 earns {w_xi1:.1f}, not 283. With the report's xi the best two single sources "
              f"earn {best_rep[0]:.2f} and {best_rep[1]:.2f}, which bracket 160, and the Whittle policy "
              "earns 260.39.\n")
    # The new sections' heavy-tailed laws cost more per epoch (a normal per item): fewer
    # replications, their CIs printed.
    md.extend(utility_law_section(min(reps, 100) if not QUICK else 30))
    md.extend(numerical_index_section(min(reps, 100) if not QUICK else 30))
    md.extend(mixed_adaptive_section(50 if QUICK else 200))
    md.extend(learning_measures_section(runs, reps_l))
    md.extend(relaxed_section())
    md.extend(corrections_section())
    with open(os.path.join(DOCS, "reproduction.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("wrote docs/reproduction.md and docs/fig_*.png")


if __name__ == "__main__":
    main()
