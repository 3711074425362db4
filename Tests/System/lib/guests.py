"""How Tests/System/run splits a run of every suite over several guests booted at once
(Tests/System/README.md): the seconds each suite took, kept and read back, and the plan.
`twice`: suites that run a second time in their guest (the libcamera 0.3 pass)."""
import json
import os
import re
import subprocess

SYSTEM_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # Tests/System

# Seconds each suite took, kept so that a fresh clone's first run splits its suites well; a run
# then records its own in .build-systest/suite-seconds.json, which the next one prefers.
SUITE_SECONDS = os.path.join(SYSTEM_DIR, "suite-seconds.json")


def suite_seconds(build_dir):
    seconds = {}
    for path in (SUITE_SECONDS, os.path.join(build_dir, "suite-seconds.json")):
        try:
            with open(path) as f:
                seconds.update({k: float(v) for k, v in json.load(f).items()})
        except (OSError, ValueError, AttributeError, TypeError):
            pass
    return seconds


def measured_suite_seconds(events_path):
    """Each suite's seconds in a Swift Testing event stream, from its testStarted to its testEnded."""
    begun, took = {}, {}
    try:
        f = open(events_path)
    except OSError:
        return took
    with f:
        for line in f:
            try:
                payload = json.loads(line).get("payload", {})
            except ValueError:
                continue
            test = payload.get("testID") or ""
            at = payload.get("instant", {}).get("absolute")
            if "/" in test or not test.startswith("SystemTests.") or at is None:
                continue
            if payload.get("kind") == "testStarted":
                begun[test] = at
            elif payload.get("kind") == "testEnded" and test in begun:
                took[test] = round(at - begun[test], 1)
    return took


def record_suite_seconds(build_dir, out_dirs):
    seconds = {}
    path = os.path.join(build_dir, "suite-seconds.json")
    try:
        with open(path) as f:
            seconds = json.load(f)
    except (OSError, ValueError):
        pass
    for out_dir in out_dirs:
        seconds.update(measured_suite_seconds(os.path.join(out_dir, "events.jsonl")))
    if seconds:
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(json.dumps(seconds, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, path)


def plan_guests(args, bundle, build_dir, twice, say):
    """The --filter list of each guest. A run of every suite is split over --guests VMs booted at
    once: whole suites, the longest first, each onto the guest with the fewest seconds so far (the
    seconds a suite took last time, or as kept in Tests/System/suite-seconds.json); a suite a --skip
    pattern matches is left out. A guest keeps about 70 % of a core busy (the tests wait on the
    emulated kernel more than they compute), and timing tests need what is left: one guest per two
    cores by default. A run with --filter boots one guest."""
    if args.guests <= 1 or args.filter or args.no_bundle:
        return [args.filter]
    listing = subprocess.run([bundle, "--testing-library", "swift-testing", "--list-tests"],
                             capture_output=True, text=True)
    tests = {}
    for line in listing.stdout.splitlines():
        suite = line.split("/", 1)[0]
        if line.startswith("SystemTests.") and not any(re.search(skip, suite) for skip in args.skip):
            tests[suite] = tests.get(suite, 0) + 1
    if listing.returncode != 0 or not tests:
        say(f"the test bundle listed no system tests (status {listing.returncode}): one guest runs them all")
        return [args.filter]
    known = suite_seconds(build_dir)
    rates = sorted(known[s] / tests[s] for s in tests if s in known)
    per_test = rates[len(rates) // 2] if rates else 5.0

    def weight(suite):
        seconds = known.get(suite, per_test * tests[suite])
        return seconds * 2 if suite in twice else seconds  # and the libcamera 0.3 pass

    guests = [[] for _ in range(min(args.guests, len(tests)))]
    loads = [0.0] * len(guests)
    for suite in sorted(tests, key=lambda s: (-weight(s), s)):
        i = loads.index(min(loads))
        guests[i].append(suite)
        loads[i] += weight(suite)
    say(f"{len(guests)} guests at once: " + "; ".join(
        f"{i}: {len(g)} suites, about {load:.0f}s" for i, (g, load) in enumerate(zip(guests, loads), start=1)))
    return [[re.escape(suite) + "(/|$)" for suite in sorted(g)] for g in guests]
