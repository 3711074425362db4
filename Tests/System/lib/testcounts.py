#!/usr/bin/env python3
"""Counts what a Swift Testing run did, from its JSON event stream
(`--event-stream-output-path FILE --event-stream-version 0`).

usage: testcounts.py EVENTS.jsonl            prints "PASSED FAILED SKIPPED STRAY_ISSUES";
                                             exits 1 when the file is missing
       testcounts.py --failures EVENTS.jsonl  prints each failed test and its first issue,
                                             one line each (a summary's tail names them)
"""
import json
import sys


def records(events):
    """The payload of each record of an open event stream, with the record's kind (lines
    that are not JSON are left out)."""
    for line in events:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        yield record.get("kind"), record.get("payload", {})


def is_error(issue):
    """Whether an issue fails its test: an error (the default severity) not marked known."""
    return not issue.get("isKnown") and issue.get("severity", "error") == "error"


def count_results(events_path):
    """Counts test functions as Swift Testing's event stream reports them:
    (passed, failed, skipped, issues outside any test)."""
    functions, suites = set(), set()
    started, skipped, failed = set(), set(), set()
    stray_issues = 0
    try:
        f = open(events_path)
    except OSError:
        return None
    with f:
        for record_kind, payload in records(f):
            if record_kind == "test":
                (functions if payload.get("kind") == "function" else suites).add(payload.get("id"))
                continue
            kind, test = payload.get("kind"), payload.get("testID")
            if kind == "testStarted":
                started.add(test)
            elif kind == "testSkipped":
                skipped.add(test)
            elif kind == "issueRecorded" and is_error(payload.get("issue", {})):
                if test:
                    failed.add(test)
                else:
                    stray_issues += 1

    def under(test_id, group):
        return any(test_id == g or test_id.startswith(g + "/") or test_id.startswith(g + ".") for g in group)

    skipped_suites = skipped & suites
    passed = fails = skips = 0
    for test in functions:
        if test in skipped or under(test, skipped_suites):
            skips += 1
        elif test in failed or (test in started and under(test, failed & suites)):
            fails += 1
        elif test in started:
            passed += 1
    return passed, fails, skips, stray_issues


def failures(events_path):
    """The tests that recorded an error issue, in the order they did, each with the first
    issue's message and source location."""
    first = {}
    with open(events_path) as f:
        for _, payload in records(f):
            issue = payload.get("issue", {})
            if payload.get("kind") != "issueRecorded" or not is_error(issue):
                continue
            test = payload.get("testID") or "(outside any test)"
            if test in first:
                continue
            where = issue.get("sourceLocation", {})
            place = f"{where.get('fileID', where.get('_filePath', '?'))}:{where.get('line', '?')}"
            texts = [m.get("text", "") for m in payload.get("messages", [])]
            message = " ".join(t for t in texts if t).replace("\n", " ")
            first[test] = f"{test} at {place}: {message[:300]}"
    return list(first.values())


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--failures":
        try:
            for line in failures(sys.argv[2]):
                print(line)
        except OSError as error:
            sys.exit(f"testcounts: {error}")
        sys.exit(0)
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    counts = count_results(sys.argv[1])
    if counts is None:
        sys.exit(f"testcounts: cannot read {sys.argv[1]}")
    print(*counts)
