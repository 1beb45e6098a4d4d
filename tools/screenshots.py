"""Look at the comment, not only parse it: render gbbot's PR comment and check run to HTML with
cmark-gfm (the renderer GitHub uses, with its extensions) and take headless-Chromium screenshots.

    python tools/screenshots.py [OUT_DIR] [--golden DIR]      # OUT_DIR default: docs/img

writes, from a real run of the bundled example's change (one break added, one fixed, five left as
they were; the same change tools/example_outputs.py makes):

- comment.png: the sticky PR comment as a reviewer first sees it (folds closed);
- check-run.png: the check run's page: conclusion, title, summary, annotations;

and with --golden, for each golden comment of the tests (tests/golden/comment/*.md), NAME.html
and NAME.png in DIR, to look at what a change to the renderer does to each case.

Needs the `cmarkgfm` package (requirements-dev.txt) and a Chromium (`chromium`, or the CHROMIUM
variable naming one). Links point at a placeholder repository (github.com/octo-org/octo-repo);
the commit ids are the example run's own. The page styles imitate GitHub's closely enough to judge
layout and length; they are not GitHub's stylesheet.
"""

from __future__ import annotations

import argparse
import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import cmarkgfm
from cmarkgfm.cmark import Options as CmarkOptions

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gbbot.analysis import report as report_  # noqa: E402
from gbbot.analysis.policy import Policy  # noqa: E402
from gbbot.core.model import Report  # noqa: E402
from gbbot.publish import checkrun, comment  # noqa: E402
from gbbot.publish.content import Content, Texts  # noqa: E402
from gbbot.render.markdown import SourceLinks  # noqa: E402
from tools.example_outputs import CHANGE, git  # noqa: E402  (the same change, made the same way)

WEB = "https://github.com/octo-org/octo-repo"
WIDTH = 920  # CSS pixels: a PR conversation column
EXAMPLES = ROOT / "examples"
GOLDEN = ROOT / "tests" / "golden" / "comment"
STYLE = """
body { margin: 0; background: #fff; color: #1f2328; font: 14px/1.5 -apple-system, "Segoe UI",
  "Noto Sans", Helvetica, Arial, sans-serif; }
.page { width: %(width)dpx; padding: 16px; box-sizing: border-box; }
.box { border: 1px solid #d1d9e0; border-radius: 6px; }
.box > header { background: #f6f8fa; border-bottom: 1px solid #d1d9e0; padding: 8px 16px;
  border-radius: 6px 6px 0 0; color: #59636e; }
.box > header b { color: #1f2328; }
.markdown { padding: 16px; overflow-wrap: break-word; }
.markdown h2 { font-size: 1.5em; border-bottom: 1px solid #d1d9e0; padding-bottom: .3em; margin: 0 0 16px; }
.markdown h3 { font-size: 1.25em; margin: 24px 0 16px; }
.markdown p, .markdown ul, .markdown ol, .markdown table, .markdown pre, .markdown details { margin: 0 0 16px; }
.markdown code { font: 85%% ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  background: rgba(129,139,152,.12); padding: .2em .4em; border-radius: 6px; }
.markdown pre { background: #f6f8fa; padding: 16px; border-radius: 6px; overflow: auto; }
.markdown pre code { background: none; padding: 0; font-size: 85%%; }
.markdown table { border-collapse: collapse; display: block; overflow: auto; }
.markdown th, .markdown td { border: 1px solid #d1d9e0; padding: 6px 13px; }
.markdown th { font-weight: 600; }
.markdown tr:nth-child(2n) { background: #f6f8fa; }
.markdown a { color: #0969da; text-decoration: none; }
.markdown summary { cursor: pointer; }
.markdown sub { color: #59636e; }
.check h1 { font-size: 20px; margin: 0 0 4px; }
.check .status { color: #59636e; margin-bottom: 16px; }
.check .ok { color: #1a7f37; } .check .failure { color: #d1242f; } .check .neutral { color: #59636e; }
.annotation { border: 1px solid #d1d9e0; border-radius: 6px; margin: 0 16px 12px; }
.annotation header { padding: 6px 12px; background: #fff8c5; border-bottom: 1px solid #d1d9e0;
  border-radius: 6px 6px 0 0; font-weight: 600; }
.annotation.failure header { background: #ffebe9; }
.annotation.notice header { background: #ddf4ff; }
.annotation pre { margin: 0; padding: 8px 12px; white-space: pre-wrap; font: 12px ui-monospace, Menlo, monospace; }
"""

MEASURE = "<script>document.title = 'height=' + document.querySelector('.page').offsetHeight;</script>"


def markdown_html(text: str) -> str:
    """GitHub's renderer: cmark-gfm with its extensions; raw HTML kept (GitHub keeps details,
    summary and sub through its sanitizer)."""
    return cmarkgfm.github_flavored_markdown_to_html(text, options=CmarkOptions.CMARK_OPT_UNSAFE)


def page(body: str) -> str:
    return (
        "<!doctype html><html><head><meta charset='utf-8'><style>"
        + STYLE % {"width": WIDTH}
        + f"</style></head><body><div class='page'>{body}</div>{MEASURE}</body></html>"
    )


def comment_page(text: str) -> str:
    head = "<header><b>github-actions</b> <span>bot</span> commented</header>"
    return page(f"<div class='box'>{head}<div class='markdown'>{markdown_html(text)}</div></div>")


def check_run_page(wanted: checkrun.CheckRunRequest) -> str:
    notes = "".join(
        f"<div class='annotation {html.escape(a['annotation_level'])}'><header>"
        f"{html.escape(a['path'])}#L{a['start_line']} · {html.escape(a['title'])}</header>"
        f"<pre>{html.escape(a['message'])}</pre></div>"
        for batch in wanted.batches
        for a in batch
    )
    mark = {"success": "✓", "failure": "✗"}.get(wanted.conclusion, "•")
    klass = {"success": "ok", "failure": "failure"}.get(wanted.conclusion, "neutral")
    head = (
        f"<div class='check markdown'><h1>{html.escape(wanted.name)}</h1>"
        f"<div class='status'><span class='{klass}'>{mark} {html.escape(wanted.conclusion)}</span>"
        f" · {html.escape(wanted.title)}</div></div>"
    )
    summary = f"<div class='markdown'>{markdown_html(wanted.summary)}</div>"
    return page(f"<div class='box'>{head}{summary}<h3 style='margin:0 16px 12px'>Annotations</h3>{notes}</div>")


def chromium() -> str:
    found = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        raise SystemExit("screenshots: no Chromium found (install `chromium`, or set CHROMIUM to one)")
    return found


def _browser(*args: str) -> str:
    flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1"]
    done = subprocess.run([chromium(), *flags, *args], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"screenshots: chromium exited {done.returncode}:\n{done.stderr[-2000:]}")
    return done.stdout


def screenshot(html_path: Path, png: Path) -> None:
    """The whole page: its height measured by the page itself, then one shot at that size."""
    dom = _browser(f"--window-size={WIDTH},800", "--dump-dom", html_path.as_uri())
    found = re.search(r"<title>height=(\d+)</title>", dom)
    height = int(found.group(1)) if found else 2000
    _browser(f"--window-size={WIDTH},{height}", f"--screenshot={png}", html_path.as_uri())


def write(out: Path, name: str, text: str, keep_html: bool = False) -> None:
    """NAME.png in `out`; the page itself beside it only when asked (docs/ keeps the pictures)."""
    with tempfile.TemporaryDirectory(prefix="gbbot-page-") as scratch:
        page_path = (out if keep_html else Path(scratch)) / f"{name}.html"
        page_path.write_text(text, encoding="utf-8")
        screenshot(page_path, out / f"{name}.png")
    print(f"wrote {out / name}.png")


# --- the example's real run --------------------------------------------------------------------


def example_diff(scratch: Path) -> tuple[Report, str]:
    """The bundled example's change, diffed against its base by `gbbot diff`: the report and
    the head commit."""
    repo = scratch / "example"
    shutil.copytree(EXAMPLES, repo, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "example")
    model = repo / "tinymodel" / "model.py"
    model.write_text("import warnings\n" + model.read_text(encoding="utf-8").replace(*CHANGE), encoding="utf-8")
    git(repo, "checkout", "-q", "-b", "change")
    git(repo, "commit", "-q", "-am", "change")
    args = [sys.executable, "-m", "gbbot", "diff", "--base", "main", "--fail-on", "none", "--json", "diff.json"]
    done = subprocess.run(args, cwd=repo, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"screenshots: gbbot diff exited {done.returncode}:\n{done.stderr[-2000:]}")
    return report_.load(repo / "diff.json"), git(repo, "rev-parse", "HEAD").strip()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="tools/screenshots.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path, default=ROOT / "docs" / "img")
    parser.add_argument("--golden", type=Path, help="also render the golden comments of the tests here")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gbbot-screenshots-") as scratch:
        made, head = example_diff(Path(scratch))
    content = Content(
        pointer=f"📄 The full report is the `gbbot-report` artifact of [this workflow run]({WEB}/actions/runs/1).",
        links=SourceLinks(WEB, head),
        gb_fix=True,
    )
    texts = Texts(made)
    body, _ = comment.body(texts, content, "", None)
    write(out, "comment", comment_page(body))
    wanted = checkrun.request(texts, Policy.of("new"), content, "gbbot", head, "gbbot:1:1", None)
    write(out, "check-run", check_run_page(wanted))
    if args.golden:
        args.golden.mkdir(parents=True, exist_ok=True)
        for path in sorted(GOLDEN.glob("*.md")):
            write(args.golden.resolve(), path.stem, comment_page(path.read_text(encoding="utf-8")), keep_html=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
