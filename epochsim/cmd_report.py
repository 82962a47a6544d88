"""`epochsim report`: a self-contained HTML page for a run, suite or sweep directory."""

from __future__ import annotations

import argparse

from epochsim.common import check_output_file, reading_user_files

HELP = """\
Write one self-contained HTML page (pictures embedded, nothing loaded from elsewhere) for DIR:
a run directory (trace.jsonl + verdict.json: verdict, repro command, story, timeline, sequence
diagram, events; and, beside the page, timeline.html: the interactive timeline it links), a suite directory (suite.json: one row per scenario, linking to a page for
each run that missed its expectation) or a sweep directory (sweep.json).

  epochsim report runs/kip570/seed-1
  epochsim report runs/suite -o suite.html"""


def register(subs) -> None:
    p = subs.add_parser("report", help="write an HTML report for a run, suite or sweep",
                        description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", metavar="DIR")
    p.add_argument("-o", "--out", metavar="FILE", help="output page (default: DIR/report.html)")
    p.set_defaults(func=main)


def main(args) -> int:
    import os

    from reports.html import write_report
    from reports.interactive import page_beside

    if args.out:
        check_output_file(args.out, (".html",))
    with reading_user_files(args.dir, args.out or args.dir):
        out = write_report(args.dir, args.out)
    live = page_beside(out)
    if os.path.isfile(os.path.join(args.dir, "trace.jsonl")) and os.path.isfile(live):
        print(f"wrote {out}, {live} (the interactive timeline)")
    else:
        print(f"wrote {out}")
    return 0
