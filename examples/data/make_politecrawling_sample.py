#!/usr/bin/env python3
"""Writes examples/data/politecrawling-sample/, a small crawl history in the PoliteCrawling format
made by this project (no real URL, no real data), and politecrawling-sample-true-rates.csv, the
change rates it was drawn from.

    python3 examples/data/make_politecrawling_sample.py            # rewrite the files
    python3 examples/data/make_politecrawling_sample.py --check    # compare with the shipped ones

The real dataset (Kolobov, Lubetzky, Peres and Horvitz, SIGIR 2019: 18.5 million URLs crawled
about daily for 14 weeks by Bing's crawler) is PoliteCrawling.gz, linked from the README of
https://github.com/microsoft/Optimal-Freshness-Crawl-Scheduling. Its five tab-separated files, as
`crawleval import politecrawling DIR` and `crawleval.fresh.import_politecrawling(DIR)` read them
(docs/freshness.md, "Importing PoliteCrawling"):

    host_hostid_isconstrained.txt     Host_URL, Host_ID, Is_constrained (0 or 1)
    url_urlid_hostid.txt              URL, URL_ID, Host_ID
    urlid_imp.txt                     URL_ID, importance
    urlid_offset_history.txt          URL_ID, first crawl's offset (days), [[interval, changed],...]
    urlid_chrate_compl_obs_hist.txt   URL_ID, change rate per day (the completely observed URLs)

The sample draws, with a fixed seed and Python's own random module (the same files on every
machine and Python version):

- 300 URLs on 8 hosts of unequal size, 3 of them politeness-constrained;
- true change rates log-normal per day (median 0.25, sigma 1.2, within [0.005, 5]), importance
  integer Pareto scores (tail index 1.5), as crawleval's synthetic freshness population;
- 14 weeks of crawls about a day apart (0.5 to 1.5 days, one crawl in 20 dropped, as the
  dataset's failed crawls are), each recording whether the page changed since the previous one;
- like the dataset, URLs that never changed in 14 weeks are left out;
- 4% of URLs completely observed (a sitemap): their rate is the changes counted over 98 days.
"""

import argparse
import math
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, "politecrawling-sample")
TRUTH = os.path.join(HERE, "politecrawling-sample-true-rates.csv")

SEED = 20261129
URLS = 300
HOST_WEIGHTS = (90, 60, 40, 35, 30, 20, 15, 10)  # URLs per host, in proportion
CONSTRAINED = (1, 3, 6)  # host ids
DAYS = 98.0


def poisson(rng, mean):
    """A Poisson draw by counting exponential gaps (means here are at most a few hundred)."""
    k, t = 0, rng.expovariate(1.0)
    while t < mean:
        k += 1
        t += rng.expovariate(1.0)
    return k


def generate():
    """The five files' text and the true rates' CSV, as {name: text}."""
    rng = random.Random(SEED)
    hosts = list(range(1, len(HOST_WEIGHTS) + 1))
    host_of = rng.choices(hosts, weights=HOST_WEIGHTS, k=URLS)
    files = {name: [] for name in ("host_hostid_isconstrained.txt", "url_urlid_hostid.txt",
                                   "urlid_imp.txt", "urlid_offset_history.txt",
                                   "urlid_chrate_compl_obs_hist.txt")}
    truth = ["id,host,rate,complete"]
    for h in hosts:
        files["host_hostid_isconstrained.txt"].append(
            f"https://site{h}.example\t{h}\t{1 if h in CONSTRAINED else 0}")
    url_id = 1000
    for i in range(URLS):
        url_id += rng.randint(1, 9)  # ids are unique, not consecutive
        rate = min(5.0, max(0.005, 0.25 * math.exp(1.2 * rng.gauss(0.0, 1.0))))
        importance = math.floor(rng.random() ** (-1.0 / 1.5))
        complete = rng.random() < 0.04
        offset = 2.0 * rng.random()
        history, t, changes = [], offset, 0
        while True:
            interval = 0.5 + rng.random()
            while rng.random() < 0.05:  # a dropped crawl: the next one comes a day later
                interval += 0.5 + rng.random()
            if t + interval > DAYS:
                break
            t += interval
            changed = 1 if rng.random() < -math.expm1(-rate * round(interval, 3)) else 0
            changes += changed
            history.append(f"[{interval:.3f}, {changed}]")
        if changes == 0:  # the dataset leaves out URLs that never changed
            continue
        h = host_of[i]
        files["url_urlid_hostid.txt"].append(f"https://site{h}.example/page/{i}\t{url_id}\t{h}")
        files["urlid_imp.txt"].append(f"{url_id}\t{importance}")
        files["urlid_offset_history.txt"].append(
            f"{url_id}\t{offset:.6f}\t[{', '.join(history)}]")
        if complete:
            files["urlid_chrate_compl_obs_hist.txt"].append(
                f"{url_id}\t{poisson(rng, rate * DAYS) / DAYS:.6f}")
        truth.append(f"{url_id},{h},{rate:.6g},{int(complete)}")
    out = {os.path.join(SAMPLE, name): "\n".join(lines) + "\n" for name, lines in files.items()}
    out[TRUTH] = "\n".join(truth) + "\n"
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="compare the shipped files with what this script writes; exit 1 if any "
                         "differs")
    args = ap.parse_args()
    files = generate()
    if args.check:
        differ = [p for p, text in files.items()
                  if not os.path.exists(p) or open(p, encoding="utf-8").read() != text]
        for p in differ:
            print(f"make_politecrawling_sample: {os.path.relpath(p, HERE)} differs from what this "
                  "script writes", file=sys.stderr)
        if not differ:
            print(f"make_politecrawling_sample: the {len(files)} files are as this script writes "
                  "them")
        return 1 if differ else 0
    os.makedirs(SAMPLE, exist_ok=True)
    for p, text in files.items():
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
    print(f"make_politecrawling_sample: wrote {len(files)} files "
          f"({sum(len(t) for t in files.values()) // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
