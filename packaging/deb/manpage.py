#!/usr/bin/env python3
"""Writes evcapture(1) in man(7) format from the command-line definitions: the JSON that
swift-argument-parser prints for `evcapture --experimental-dump-help` (the same data its
generate-manual plugin reads), so options and subcommands can never drift from the code.

usage: manpage.py DUMP.json VERSION DATE > evcapture.1
"""
import json
import sys


def esc(text):
    """Text for roff: backslashes, and lines that would start a request."""
    out = []
    for line in (text or "").replace("\\", "\\e").split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def flag_names(arg):
    names = []
    for n in arg.get("names", []):
        prefix = {"short": "-", "long": "--", "longWithSingleDash": "-"}[n["kind"]]
        names.append("\\fB" + (prefix + n["name"]).replace("-", "\\-") + "\\fR")
    return names


def usage_word(arg):
    value = arg.get("valueName", "value")
    if arg["kind"] == "positional":
        word = f"\\fI{value}\\fR" + ("..." if arg.get("isRepeating") else "")
    else:
        pref = arg.get("preferredName") or arg["names"][0]
        prefix = {"short": "-", "long": "--", "longWithSingleDash": "-"}[pref["kind"]]
        word = "\\fB" + (prefix + pref["name"]).replace("-", "\\-") + "\\fR"
        if arg["kind"] == "option":
            word += f" \\fI{value}\\fR"
        if arg.get("isRepeating"):
            word += " ..."
    return f"[{word}]" if arg.get("isOptional") else word


def visible(args):
    return [a for a in args or [] if a.get("shouldDisplay", True)
            and not (a["kind"] == "flag" and a.get("valueName") in ("help", "version"))]


def describe_arguments(lines, args):
    for arg in visible(args):
        lines.append(".TP")
        if arg["kind"] == "positional":
            lines.append(f"\\fI{arg.get('valueName', 'value')}\\fR")
        else:
            head = ", ".join(flag_names(arg))
            if arg["kind"] == "option":
                head += f" \\fI{arg.get('valueName', 'value')}\\fR"
            lines.append(head)
        text = esc(arg.get("abstract", ""))
        if arg.get("discussion"):
            text += "\n" + esc(arg["discussion"] if isinstance(arg["discussion"], str) else "")
        if arg.get("defaultValue") not in (None, ""):
            text += f" (default: {esc(str(arg['defaultValue']))})"
        lines.append(text)


def main(dump_path, version, date):
    with open(dump_path) as f:
        command = json.load(f)["command"]
    name = command["commandName"]
    lines = [f'.TH {name.upper()} 1 "{date}" "{name} {version}" "User Commands"',
             ".SH NAME", f"{name} \\- {esc(command.get('abstract', ''))}",
             ".SH SYNOPSIS", f".B {name}", "\\fIcommand\\fR [\\fIoptions\\fR]",
             f".br\n.B {name}\n\\fB\\-\\-version\\fR | \\fB\\-\\-help\\fR"]
    if command.get("discussion"):
        lines += [".SH DESCRIPTION", esc(command["discussion"])]
    lines.append(".SH COMMANDS")
    for sub in command.get("subcommands", []):
        if not sub.get("shouldDisplay", True):
            continue
        full = f"{name} {sub['commandName']}"
        usage = " ".join(usage_word(a) for a in visible(sub.get("arguments")))
        lines += [f'.SS "{full}"', f".B {full}", usage, ".PP", esc(sub.get("abstract", ""))]
        if sub.get("discussion"):
            lines += [".PP", esc(sub["discussion"])]
        if visible(sub.get("arguments")):
            lines.append(".RS")
            describe_arguments(lines, sub.get("arguments"))
            lines.append(".RE")
    lines += [".SH FILES",
              ".TP", "\\fI/etc/evcapture/config.toml\\fR",
              "The service's configuration (TOML); every setting is optional.",
              ".TP", "\\fI/run/evcapture/evcapture.sock\\fR",
              "The service's JSON-lines socket, readable by group \\fBevcapture\\fR "
              "(\\fBevcapture monitor\\fR connects to it).",
              ".TP", "\\fI/var/lib/evcapture\\fR",
              "Photos, videos and the remembered control (the service's StateDirectory).",
              ".TP", "\\fI/usr/lib/udev/rules.d/70\\-evcapture.rules\\fR",
              "Device access and roles (\\fBEVCAPTURE_ROLE\\fR) for known devices.",
              ".SH SEE ALSO",
              "\\fBsystemctl\\fR(1), \\fBudevadm\\fR(8), \\fBevemu\\-record\\fR(1), \\fBv4l2\\-ctl\\fR(1)"]
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
