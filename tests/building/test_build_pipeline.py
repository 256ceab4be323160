"""`timefoil build`: generation through a served model and blind-lm, a recipe end to end, a killed
build resumed, simulated annotators collected into a human run, and the annotation page in Chromium."""
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from helpers import generated_suite

from timefoil.benchmarks import folder
from timefoil.building.asking import Asker
from timefoil.building.generate import generate
from timefoil.building.rules import swap_events, swap_words

pytest.importorskip("httpx")
from provider_fakes import FakeServer  # noqa: E402
from helpers import cli

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SCRIPTED = {"the yellow square moves from left to right": "the yellow square moves from right to left",
            "the green square moves slowly from left to right": "the green square moves quickly from left to right"}


def scripted_server(latency=0.0):
    """Writes the counterfactual scripted for the prompt's last caption; "Not applicable" otherwise."""
    server = FakeServer(failure_rate=0.0)
    server.latency = latency

    def reply(body):
        text = body["messages"][-1]["content"][-1]["text"]
        caption = re.findall(r"Caption: (.*)", text)[-1]
        answer = SCRIPTED.get(caption, "Not applicable")
        with server.lock:
            server.asked = getattr(server, "asked", []) + [caption]
        return {"choices": [{"message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}]}

    server.reply = reply
    return server


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    """Up to 20 (video, caption) pairs: the true caption of each video of a synthetic suite."""
    suite = generated_suite(tmp_path_factory, seed=3, per_family=2)
    root = str(tmp_path_factory.mktemp("pairs"))
    seen, out = set(), []
    with open(os.path.join(suite, "synth.jsonl")) as handle:
        for line in handle:
            record = json.loads(line)
            path = record["videos"][0]["path"]
            if record["role"] in ("main", "text") and record.get("options_are", "texts") == "texts" \
                    and path not in seen and len(out) < 20:
                seen.add(path)
                out.append({"id": os.path.basename(path)[:-4], "video": os.path.join(suite, path),
                            "caption": record["texts"][record["target"]]})
    with open(os.path.join(root, "pairs.jsonl"), "w") as handle:
        handle.writelines(json.dumps(p) + "\n" for p in out)
    return root, out


def test_generation_through_a_served_model_reads_scripted_counterfactuals(tmp_path):
    server = scripted_server()
    try:
        asker = Asker(f"openai:m@{server.url}", str(tmp_path / "c"))
        captions = list(SCRIPTED) + ["a red circle"]
        made = generate(asker, captions, ["direction"])
        again = Asker(f"openai:m@{server.url}", str(tmp_path / "c"))
        generate(again, captions, ["direction"])
    finally:
        server.close()
    assert [(i, f.text if f else None, why) for i, f, why in made] == [
        (0, SCRIPTED[captions[0]], ""), (1, SCRIPTED[captions[1]], ""), (2, None, "not applicable")]
    assert asker.asked == 3 and (again.asked, again.cached) == (0, 3)  # a rerun is served by the cache


def test_generation_with_blind_lm_asks_once_and_records_every_reply(tmp_path):
    pytest.importorskip("transformers")
    captions = ["a man climbs up a ladder", "a cat sleeps on a sofa"]
    asker = Asker("blind-lm", str(tmp_path / "c"))
    made = generate(asker, captions, ["direction", "sequence"], max_tokens=24)
    assert [i for i, _, _ in made] == [0, 0, 1, 1] and asker.asked == 4
    # each reply is a counterfactual labelled with the aspect asked for, or one of the stated reasons
    for (index, foil, why), aspect in zip(made, ["direction", "sequence"] * 2):
        if foil is None:
            assert why in {"not applicable", "empty reply", "unchanged"}
        else:
            assert (why, foil.aspect, foil.rule) == ("", aspect, "llm") and foil.text.strip()
            assert foil.text.lower().rstrip(".") != captions[index]
    rerun = Asker("blind-lm", str(tmp_path / "c"))
    assert generate(rerun, captions, ["direction", "sequence"], max_tokens=24) == made
    assert rerun.asked == 0


def test_a_recipe_builds_a_benchmark_people_validate_and_models_run_on(pairs, tmp_path):
    root, source = pairs
    server = scripted_server()
    recipe = {"name": "mini-temporal", "source": os.path.join(root, "pairs.jsonl"), "steps": [
        {"generate": "rules", "rules": ["swap-events", "spatial", "direction"]},
        {"generate": "llm", "model": f"openai:m@{server.url}", "aspects": ["direction"]},
        {"filter": "same-words", "only": ["swap-events"]},
        {"filter": "language-prior", "model": "random", "threshold": 0.8}]}
    with open(tmp_path / "recipe.json", "w") as handle:
        json.dump(recipe, handle)
    out, cache = str(tmp_path / "build"), str(tmp_path / "cache")
    try:
        made = cli("build", "run", str(tmp_path / "recipe.json"), "--out", out, "--cache-dir", cache)
    finally:
        server.close()
    assert made.returncode == 0, made.stderr
    # Independent route: the rules applied to the captions by hand, plus the two scripted replies
    # (the llm and the spatial rule both make the left/right swap; the same text counts once per source).
    expected = set()
    for p in source:
        for foil in (swap_events(p["caption"]), swap_words(p["caption"], "spatial"),
                     swap_words(p["caption"], "direction")):
            if foil:
                expected.add((p["id"], foil.text, foil.aspect))
        if p["caption"] in SCRIPTED:
            expected.add((p["id"], SCRIPTED[p["caption"]], "direction"))
    items = folder.load(os.path.join(out, "benchmark"))
    got = {(i.metadata["source"], i.texts[1], i.test) for i in items}
    assert got == expected and len(items) == len(expected) > 5
    build = json.load(open(os.path.join(out, "build.json")))
    assert [s["step"] for s in build["steps"]] == ["01-generate-rules", "02-generate-llm", "03-filter-same-words",
                                                   "04-filter-language-prior"]
    assert build["steps"][1]["model_fingerprint"]["name"] == "openai"
    assert build["steps"][3]["blind_accuracy"]["before"] is not None and build["items"] == len(items)
    sheet = open(os.path.join(out, "datasheet.md")).read()
    assert f"{len(source)} (video, caption) pairs" in sheet and "| order | swap-events |" in sheet

    # Two simulated annotators: A always picks the caption; B misses every third item.
    bench = os.path.join(out, "benchmark")
    files = []
    for name, wrong_every in (("ann", 0), ("bob", 3)):
        answers = {}
        for k, item in enumerate(items):
            wrong = wrong_every and k % wrong_every == 0
            answers[item.id] = {"choice": 1 if wrong else 0, "shown_order": [0, 1], "ms": 900}
        path = tmp_path / f"answers-{name}.json"
        path.write_text(json.dumps({"annotator": name, "benchmark": "mini-temporal", "task": "choice", "seed": 0,
                                    "item_order": [i.id for i in items], "answers": answers}))
        files.append(str(path))
    human = str(tmp_path / "human")
    collected = cli("build", "collect", bench, *files, "--rule", "unanimous", "--out", human,
                    "--accepted", str(tmp_path / "accepted"), "--build-dir", out, "--json")
    assert collected.returncode == 0, collected.stderr
    result = json.loads(collected.stdout)
    both_right = sum(1 for k in range(len(items)) if k % 3 != 0)
    assert result["accepted"] == both_right == len(folder.load(str(tmp_path / "accepted")))
    # Mode of two: a disagreement is a tie, scored wrong and shown as a parse failure
    scored = json.loads(cli("score", human, "--json").stdout)
    accuracy = {m["name"]: m for m in scored["metrics"]}["overall/accuracy"]
    assert accuracy["value"] == pytest.approx(100 * both_right / len(items))
    assert result["human_accuracy"] == pytest.approx(both_right / len(items))
    assert scored["parse_failures"] == len(items) - both_right
    assert "Validation by people" in open(os.path.join(out, "datasheet.md")).read()

    model = cli("run", "items", "--model", "bag-of-frames", "--data", bench, "--protocol", "similarity",
                "--out", str(tmp_path / "bof"), "--cache-dir", cache, "--no-progress")
    assert model.returncode == 0, model.stderr
    report = cli("report", str(tmp_path / "bof"), human, "--html", str(tmp_path / "r.html"))
    assert report.returncode == 0, report.stderr
    assert "human:mode of 2" in report.stdout and "bag-of-frames" in report.stdout


def settled_count(server, quiet: float = 1.0, limit: float = 20.0) -> int:
    """How many requests the server has seen once none has come for ``quiet`` seconds: requests a
    killed client had already sent can still be read by the server just after the kill."""
    seen, since, deadline = len(server.asked), time.monotonic(), time.monotonic() + limit
    while time.monotonic() - since < quiet and time.monotonic() < deadline:
        time.sleep(0.05)
        if len(server.asked) != seen:
            seen, since = len(server.asked), time.monotonic()
    return seen


def test_a_killed_build_resumes_without_asking_the_model_again(pairs, tmp_path):
    root, source = pairs
    server = scripted_server(latency=0.1)
    recipe = {"name": "k", "source": os.path.join(root, "pairs.jsonl"), "steps": [
        {"generate": "llm", "model": f"openai:m@{server.url}", "aspects": ["direction", "sequence"]}]}
    with open(tmp_path / "recipe.json", "w") as handle:
        json.dump(recipe, handle)
    command = [sys.executable, "-m", "timefoil.cli", "build", "run", str(tmp_path / "recipe.json"), "--out",
               str(tmp_path / "build"), "--cache-dir", str(tmp_path / "c")]
    try:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline and len(getattr(server, "asked", [])) < 12:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        first = settled_count(server)
        distinct = 2 * len(source)
        assert first < distinct, "the build finished before the kill"
        with sqlite3.connect(tmp_path / "c" / "responses.sqlite") as db:
            stored = db.execute("SELECT count(*) FROM responses").fetchone()[0]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    assert 0 < stored <= first
    # The resumed build asks exactly what the killed one had not stored: nothing stored is asked again.
    # (Answers the server sent but the killed process had not yet written are lost with it: how many
    # depends on the machine's load, so the count is read from the cache, not assumed.)
    assert len(server.asked) - first == distinct - stored
    assert json.load(open(tmp_path / "build" / "build.json"))["steps"][0]["in"] == len(source)


# -- the annotation page in headless Chromium ------------------------------------------------------------------
class Browser:
    """A headless Chromium driven over the DevTools protocol."""

    def __init__(self, profile, downloads):
        import socket
        import urllib.request

        import websocket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.proc = subprocess.Popen([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                      f"--remote-debugging-port={port}", "--remote-allow-origins=*",
                                      f"--user-data-dir={profile}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json", timeout=2).read())
                page = next(t for t in targets if t["type"] == "page")
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30)
        self.next_id = 0
        self.call("Browser.setDownloadBehavior", behavior="allow", downloadPath=str(downloads))

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(message["error"])
                return message.get("result", {})

    def evaluate(self, expression):
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def open(self, url):
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + 30
        while self.evaluate("document.readyState + (typeof DATA)") != "completeobject":
            assert time.monotonic() < deadline, "the page did not load"
            time.sleep(0.1)

    def key(self, key):
        codes = {"ArrowRight": 39, "ArrowLeft": 37}
        code = codes[key] if key in codes else ord(key.upper())
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", type=kind, key=key, windowsVirtualKeyCode=code,
                      **({"text": key} if kind == "keyDown" and len(key) == 1 else {}))

    def close(self):
        self.ws.close()
        self.proc.kill()
        self.proc.wait(timeout=60)


# A caption reading {{title}} once received the title, whose quote then ended the JSON string
HOSTILE_NAME = "\"+(window.ran = 1)+\" </script><script>window.ran = 4</script>{{title}}"
HOSTILE_CAPTIONS = {1: "{{title}} </script><script>window.ran = 2</script>", 2: "\" onclick=\"window.ran = 3\" x='"}


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_the_annotation_page_records_keyboard_answers_and_shows_markup_as_text(pairs, tmp_path):
    from timefoil.building.annotate import page_data
    from timefoil.building.answers import read_answers
    from timefoil.building.collect import votes_by_item

    root, source = pairs
    bench = str(tmp_path / "bench")
    os.makedirs(os.path.join(bench, "videos"))
    lines = []
    for k, pair in enumerate(source[:4]):
        shutil.copy(pair["video"], os.path.join(bench, "videos", f"{k}.mp4"))
        caption = pair["caption"] if k else "<b>bold</b> & <img src=x onerror=\"document.title='pwned'\"> caption"
        caption = HOSTILE_CAPTIONS.get(k, caption)
        lines.append({"id": f"i{k}", "test": "t", "video": f"videos/{k}.mp4",
                      "texts": [caption, f"foil {k}", f"other {k}"]})
    with open(os.path.join(bench, "items.jsonl"), "w") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in lines)
    with open(os.path.join(bench, "benchmark.json"), "w") as handle:
        json.dump({"name": HOSTILE_NAME}, handle)
    page = str(tmp_path / "page.html")
    made = cli("build", "annotate", bench, "--annotator", "ann", "--frames", "3", "--out", page)
    assert made.returncode == 0, made.stderr
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    browser = Browser(tmp_path / "profile", downloads)
    try:
        browser.open(f"file://{page}")
        shown = browser.evaluate("DATA.items.map(i => [i.id, i.order])")
        assert sorted(i for i, _ in shown) == ["i0", "i1", "i2", "i3"]
        assert browser.evaluate("document.querySelectorAll('ol.options b, ol.options img').length") == 0
        assert "<b>bold</b> &" in browser.evaluate("[...document.querySelectorAll('li')].map(l => l.textContent)"
                                                   ".join('|') + DATA.items.map(i => i.texts.join('|')).join('|')")
        # Hostile captions and the benchmark's name are text: no script of theirs ran, none was added
        assert browser.evaluate("document.title") == f"{HOSTILE_NAME}: choice (ann)"
        assert browser.evaluate("window.ran") is None and browser.evaluate("document.scripts.length") == 2
        shown_texts = browser.evaluate("Object.fromEntries(DATA.items.map(i => [i.id, i.texts]))")
        for k, caption in HOSTILE_CAPTIONS.items():
            assert caption in shown_texts[f"i{k}"]
        # Answer by keyboard: the k-th item shown gets key (k % 3) + 1, i.e. shown position k % 3
        expected = {}
        for k, (item_id, order) in enumerate(shown):
            browser.key(str(k % 3 + 1))
            expected[item_id] = order[k % 3]
        # The page stays on the last item once answered; one step back is the third, answered again with 1
        browser.key("ArrowLeft")
        browser.key("1")
        expected[shown[2][0]] = shown[2][1][0]
        assert browser.evaluate("document.getElementById('count').textContent") == "4 answered"
        browser.key("s")
        deadline = time.monotonic() + 20
        while not os.path.exists(downloads / "answers-ann.json"):
            assert time.monotonic() < deadline, "no file was saved"
            time.sleep(0.1)
        time.sleep(0.3)
    finally:
        browser.close()
    saved = json.loads((downloads / "answers-ann.json").read_text())
    votes = votes_by_item([read_answers(str(downloads / "answers-ann.json"))], folder.load(bench))
    assert {k: v for k, [(_, v)] in votes.items()} == expected
    assert saved["item_order"] == [i for i, _ in shown] and saved["annotator"] == "ann"
    # The order is the annotator's own: the same name gives the same order, another name another
    ann = page_data(folder.load(bench), "ann", "choice", benchmark="b", frames=1)
    bob = page_data(folder.load(bench), "bob", "choice", benchmark="b", frames=1)
    assert [[i["id"], i["order"]] for i in ann["items"]] == [list(entry) for entry in shown]
    assert [[i["id"], i["order"]] for i in bob["items"]] != [list(entry) for entry in shown]
    assert sorted(i["id"] for i in bob["items"]) == sorted(i for i, _ in shown)
