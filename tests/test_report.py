"""``crop-hf report``: the numbers behind each plot, the files the card links, gold scores, scale.

Outputs are made by real synthesis runs with the stand-in models of synthesis_fakes.py, so the
right numbers are known from the input sentences and the run's own statistics.json.
"""

import json
import re
from collections import Counter
from pathlib import Path

import datasets
import pytest
from synthesis_fakes import FakeTagger, FakeTranslator, fake_config, fake_models

from crop_hf.cli import main
from crop_hf.metrics.corpus import retokenize_tags
from crop_hf.report import read_report_data, write_report
from crop_hf.report.plots import PLOTS, funnel_numbers, label_numbers, status_numbers
from crop_hf.synthesis import SynthesisConfig, synthesize

RAW = {
    "de": [
        "Ich wohne in Hamburg .",  # kept: Hamburg LOC
        "Siemens AG sitzt in München .",  # kept: AG ORG, München PER
        "das ist alles klein .",  # all_o: tagged, no entity
        "Das broken Beispiel mit Maria und Hamburg .",  # markers_incomplete, after tagging 3 entities
        "eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf dreizehn",  # too_long: never tagged
        "Anna trifft Peter in Hamburg .",  # kept
        "Wir fahren nach Köln und Hamburg .",  # projection_incomplete: Köln comes back as Kolonia
        "Siehe __SLOT2__ Fußnote .",  # contains_marker: never tagged
    ],
    "nl": [
        "Ik woon in Hamburg .",
        "niets hier .",
        "Jan werkt bij Philips AG .",
    ],
}
NEVER_TAGGED = {"too_long", "contains_marker"}


class RenamingTranslator(FakeTranslator):
    """The identity, except that the back-translated entity "Köln" becomes "Kolonia" (not in the raw sentence)."""

    def __call__(self, records, src_lang, tgt_lang, num_return_sequences=1, **kwargs):
        outputs = super().__call__(records, src_lang, tgt_lang, num_return_sequences, **kwargs)
        for output in outputs:
            for entity in output.get("entities", []):
                if entity["text"] == "Köln":
                    entity["text"] = "Kolonia"
        return outputs


def write_raw(folder: Path, raw: dict[str, list[str]]) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    for lang, lines in raw.items():
        (folder / f"{lang}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(folder / "{lang}.txt")


def run(tmp_path: Path, raw=RAW, name="out", **overrides):
    models = fake_models()
    models.translator = RenamingTranslator()
    settings = {"tgt_langs": list(raw), "shard_size": 4, **overrides}
    return synthesize(fake_config(write_raw(tmp_path / f"raw-{name}", raw), str(tmp_path / name), **settings),
                      models=models)


@pytest.fixture(scope="module")
def output(tmp_path_factory):
    return run(tmp_path_factory.mktemp("report")).output_dir


def test_every_plot_number_agrees_with_the_statistics_and_the_dataset(output):
    statistics = json.loads((output / "statistics.json").read_text())
    data = read_report_data(output)
    assert [lang.lang for lang in data.languages] == ["de", "nl"]
    assert {lang.lang: lang.counts for lang in data.languages} == statistics
    assert statistics["de"]["projection_incomplete"] == 1  # the renamed entity really failed projection

    # Funnel: input, minus each reason, gives kept; every step is the sum over languages.
    steps = funnel_numbers(data)
    assert steps[0] == ("input", 11, 11) and steps[-1] == ("kept", 5, 5)
    for name, before, after in steps[1:-1]:
        assert before - after == sum(stats[name] for stats in statistics.values()) > 0
    assert steps[-2][2] == steps[-1][1]
    assert {name for name, _, _ in steps[1:-1]} == {r for s in statistics.values() for r, n in s.items()
                                                   if n and r not in {"input", "kept"}}

    kept = datasets.load_from_disk(str(output / "dataset"))
    dropped = datasets.load_from_disk(str(output / "discarded"))
    for lang in data.languages:
        # Target side: the entities of the kept rows' ClassLabel tags.
        names = kept[lang.lang].features["ner_tags"].feature.names
        expected = Counter(names[i][2:] for row in kept[lang.lang]["ner_tags"] for i in row if names[i][0] == "B")
        assert lang.target_labels == dict(expected)
        # Source side: what the source tagger finds in every sentence that reached tagging (the
        # translation is the identity, so the tagger can be asked again here).
        tagged = [text for text in dropped[lang.lang]["text"]
                  if dropped[lang.lang][dropped[lang.lang]["text"].index(text)]["reason"] not in NEVER_TAGGED]
        tagged += [" ".join(tokens) for tokens in kept[lang.lang]["tokens"]]
        assert lang.source_labels == dict(Counter(e["entity_group"] for es in FakeTagger()(tagged) for e in es))
        # Lengths: one per sentence, kept and dropped.
        assert sorted(lang.lengths_kept) == sorted(len(t) for t in kept[lang.lang]["tokens"])
        assert len(lang.lengths_dropped) == lang.input - lang.kept
        # Statuses: one per translated entity, in kept and dropped sentences.
        assert lang.statuses_kept == dict(Counter(s for row in kept[lang.lang]["projection_status"] for s in row))
    de = data.languages[0]
    assert de.statuses_dropped == {"found": 1, "missing": 1}  # Hamburg found, Köln missing
    assert de.source_labels["PER"] - de.target_labels["PER"] == 3  # Beispiel, Maria, Köln never reached a kept row
    assert status_numbers(data)["de"]["missing"] == 1
    assert label_numbers(data)["target"]["all"] == dict(Counter(de.target_labels) + Counter(
        data.languages[1].target_labels))


def test_report_files_card_links_and_page(output):
    files = write_report(output)
    assert set(files.plots) == {"funnel", "labels", "lengths", "statuses"}  # no gold given: no gold plot
    for path in files.plots.values():
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads(files.json.read_text()) == json.loads(json.dumps(files.data.to_dict()))
    card = (output / "README.md").read_text()
    links = re.findall(r"\]\(([^)]+)\)", card.split("<!-- crop-hf report: start -->")[1])
    assert sorted(links) == sorted([f"report/{PLOTS[n][0]}" for n in files.plots] + ["report/index.html"])
    for link in links:
        assert (output / link).is_file(), link
    page = files.html.read_text()
    assert page.count('src="data:image/png;base64,') == len(files.plots)  # self-contained
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # nothing fetched from a network
    assert "<td>projection_incomplete</td>" not in page and "projection_\u200bincomplete" in page
    # A second report replaces the card's section instead of adding another.
    write_report(output)
    assert (output / "README.md").read_text().count("## Plots") == 1


def test_synthesize_with_report_links_plots_from_the_card(tmp_path):
    result = run(tmp_path, report=True)
    card = (result.output_dir / "README.md").read_text()
    assert "![Filter funnel" in card and "report/funnel.png" in card
    assert card.index("## Plots") < card.index("## Features")  # where the template keeps the section
    for link in re.findall(r"\]\((report/[^)]+)\)", card):
        assert (result.output_dir / link).is_file()


def test_synthesize_report_without_matplotlib_fails_before_the_run(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    with pytest.raises(ImportError, match=r"crop-hf\[report\]"):
        SynthesisConfig(tgt_langs=["de"], report=True)


def test_a_run_that_kept_nothing_gets_a_report_that_says_so(tmp_path):
    result = run(tmp_path, raw={"de": ["nur kleine wörter .", "auch hier nichts ."]})
    assert result.statistics["de"]["kept"] == 0
    files = write_report(result.output_dir)
    assert set(files.plots) >= {"funnel", "labels", "lengths"}
    message = "No sentence was kept: all 2 sentences read were dropped, most of them by all_o (2)."
    assert message in files.html.read_text()
    assert f"**{message}**" in (result.output_dir / "README.md").read_text()
    assert files.data.languages[0].target_labels == {} and files.data.languages[0].lengths_kept == []


def test_one_and_forty_languages_scale(tmp_path):
    from PIL import Image

    from crop_hf.data.xtreme40 import XTREME40_LANGUAGES
    from crop_hf.report.data import LanguageReport, ReportData
    from crop_hf.report.page import render_html

    langs = list(XTREME40_LANGUAGES)  # English among them: a report does not care which is the source
    assert len(langs) == 40

    def language(lang, k):
        return LanguageReport(lang, {"input": 10 + k, "kept": 5 + k % 5, "too_long": 2, "all_o": 3 - k % 5 // 2},
                              source_labels={"PER": 4 + k, "LOC": 3}, target_labels={"PER": 3 + k, "LOC": 2},
                              lengths_kept=[5, 7, 9 + k % 7], lengths_dropped=[3, 20],
                              statuses_kept={"found": 5}, statuses_dropped={"missing": 1 + k % 3})

    reasons = ["too_long", "all_o"]
    many = ReportData("forty", reasons, [language(lang, k) for k, lang in enumerate(langs)])
    one = ReportData("one", reasons, [language("de", 0)])
    heights = {}
    for name in ("funnel", "labels", "lengths", "statuses"):
        draw = PLOTS[name][2]
        big, small = draw(many, tmp_path / f"40-{name}.png"), draw(one, tmp_path / f"1-{name}.png")
        heights[name] = Image.open(big).height, Image.open(small).height
    assert all(big > small for big, small in heights.values()), heights
    page = render_html(many, {"funnel": tmp_path / "40-funnel.png"})
    assert all(f"<td>{lang}</td>" in page for lang in langs)
    kept = sum(5 + k % 5 for k in range(40))
    assert funnel_numbers(many)[-1] == ("kept", kept, kept)


def test_gold_labels_give_projection_scores_per_language_and_type(output, tmp_path):
    kept = datasets.load_from_disk(str(output / "dataset"))
    gold = {}
    for lang in kept:
        names = kept[lang].features["ner_tags"].feature.names
        rows = [{"tokens": row["tokens"], "ner_tags": [names[i] for i in row["ner_tags"]]} for row in kept[lang]]
        gold[lang] = rows
    # de: the gold set also marks "Anna" (the tagger never tags a first word) and knows the
    # sentence whose projection failed, which then counts as matched but not kept.
    anna = next(row for row in gold["de"] if row["tokens"][0] == "Anna")
    anna["ner_tags"][0] = "B-PER"
    gold["de"].append({"tokens": RAW["de"][6].split(), "ner_tags": ["O", "O", "O", "B-LOC", "O", "B-LOC", "O"]})
    gold["de"].append({"tokens": ["not", "in", "the", "run"], "ner_tags": ["O", "O", "O", "B-PER"]})
    for lang, rows in gold.items():
        datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "gold" / lang))

    assert main(["report", str(output), "--gold", str(tmp_path / "gold" / "{lang}"),
                 "--report_dir", str(tmp_path / "rep")]) == 0
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    de, nl = report["languages"]
    entities = sum(de["target_labels"].values())
    assert de["gold"]["precision"] == 1.0
    assert de["gold"]["recall"] == pytest.approx(entities / (entities + 1))
    assert de["gold"]["per_type"]["PER"]["recall"] < 1.0 and de["gold"]["per_type"]["LOC"]["f1"] == 1.0
    assert de["gold"]["matched"] == de["counts"]["kept"] + 1 and de["gold"]["kept"] == de["counts"]["kept"]
    assert nl["gold"]["f1"] == 1.0
    assert (tmp_path / "rep" / "gold.png").is_file()


def test_gold_keyed_by_language_in_one_dataset_dict(output, tmp_path):
    kept = datasets.load_from_disk(str(output / "dataset"))
    names = kept["de"].features["ner_tags"].feature.names
    gold = datasets.DatasetDict({lang: datasets.Dataset.from_dict({
        "tokens": kept[lang]["tokens"],
        "ner_tags": [[names[i] for i in tags] for tags in kept[lang]["ner_tags"]]}) for lang in kept})
    gold.save_to_disk(str(tmp_path / "gold"))
    files = write_report(output, gold=str(tmp_path / "gold"), report_dir=tmp_path / "rep", update_card_file=False)
    assert [lang.gold["f1"] for lang in files.data.languages] == [1.0, 1.0]
    assert "gold" in files.plots


def test_gold_words_are_moved_onto_character_tokens():
    assert retokenize_tags(["東京", "に", "住む"], ["B-LOC", "O", "O"], list("東京に住む")) == \
        ["B-LOC", "I-LOC", "O", "O", "O"]
    assert retokenize_tags(["a"], ["O"], ["b"]) is None


def test_an_output_with_slot_labels_reports_the_same_way(tmp_path):
    # The layout a translate-align output needs: statistics.json and a DatasetDict keyed by
    # language with tokens and a tag column of IOB tags (here strings, under slot_tags).
    out = tmp_path / "slots"
    datasets.DatasetDict({"hi": datasets.Dataset.from_dict({
        "tokens": [["kal", "ka", "mausam"], ["alarm", "set", "karo"]],
        "slot_tags": [["B-DATE_TIME", "O", "O"], ["O", "O", "O"]]})}).save_to_disk(str(out / "dataset"))
    (out / "statistics.json").write_text(json.dumps({"hi": {"input": 3, "kept": 2, "no_alignment": 1}}))
    files = write_report(out)
    hi = files.data.languages[0]
    assert files.data.label_kind == "label" and hi.target_labels == {"DATE_TIME": 1}
    assert hi.source_labels is None and "statuses" not in files.plots
    assert funnel_numbers(files.data) == [("input", 3, 3), ("no_alignment", 3, 2), ("kept", 2, 2)]


def test_a_folder_that_is_not_a_finished_run_is_named_in_the_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"statistics\.json"):
        write_report(tmp_path)
    (tmp_path / "statistics.json").write_text('{"de": {"input": 1,\n')
    with pytest.raises(ValueError, match=r"statistics.json, line 2"):
        write_report(tmp_path)


def test_report_command_takes_the_folder_first_or_as_an_option(output, capsys):
    assert main(["report", str(output), "--update_card", "false"]) == 0
    first = capsys.readouterr().out
    assert main(["report", "--output_dir", str(output), "--no_update_card"]) == 0
    assert capsys.readouterr().out == first
    assert "5 of 11 sentences kept" in first and "index.html" in first


def test_report_command_lists_every_file_it_wrote(output, tmp_path, capsys):
    folder = tmp_path / "rep"
    assert main(["report", str(output), "--report_dir", str(folder)]) == 0
    listed = [line.split(": ", 1) for line in capsys.readouterr().out.splitlines()
              if line.startswith(("plot: ", "numbers: ", "page: "))]
    assert sorted(Path(path) for _, path in listed) == sorted(folder.iterdir())  # every file, each once
    assert ["plot", str(folder / "funnel.png")] in listed and ["numbers", str(folder / "report.json")] in listed


def test_push_to_hub_uploads_the_plots_with_the_card(output, monkeypatch):
    from huggingface_hub import DatasetCard, HfApi

    from crop_hf.synthesis.runner import SynthesisResult, push_to_hub

    write_report(output)
    calls = []
    monkeypatch.setattr(datasets.DatasetDict, "push_to_hub", lambda self, repo_id, **kw: calls.append("data"))
    monkeypatch.setattr(HfApi, "upload_folder", lambda self, **kw: calls.append(
        ("report", kw["path_in_repo"], sorted(p.name for p in Path(kw["folder_path"]).iterdir()))))
    monkeypatch.setattr(DatasetCard, "push_to_hub", lambda self, repo_id, **kw: calls.append(
        ("card", "report/funnel.png" in self.text)))
    push_to_hub(SynthesisResult(output), "org/crop")
    assert calls[0] == "data" and calls[2] == ("card", True)
    assert calls[1][:2] == ("report", "report") and "funnel.png" in calls[1][2]
