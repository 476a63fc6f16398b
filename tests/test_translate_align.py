"""Translate-and-align (CSTOP 6.1): exact outcomes with stand-in translators and aligners, bad input
counted with its line, resumption, the command with a tiny M2M100 + eflomal, and projection quality
on the real Hinglish-TOP (English parse -> human code-switched rewrite standing in for MT)."""

from __future__ import annotations

import json

import datasets
import pytest
from synthesis_fakes import as_rows

from crop_hf.augment.inputs import ParseInput, iter_parse_inputs
from crop_hf.augment.translate_align import (
    TRANSLATE_ALIGN_REASONS,
    TranslateAlignConfig,
    TranslateAlignModels,
    align_batch,
    translate_align,
)
from crop_hf.seqlogical import parse, to_flat

# word-by-word "Spanish": the identity alignment is right unless a test says otherwise
WORDS = {"set": "pon", "an": "una", "alarm": "alarma", "for": "para", "call": "llama", "mom": "mamá",
         "at": "a", "home": "casa", "play": "pon", "music": "música", "by": "de", "adele": "adele"}


class DictTranslator:
    """Translates word by word with WORDS; ``overrides`` map an utterance to a fixed translation."""

    def __init__(self, overrides: dict[str, str] | None = None) -> None:
        self.overrides = overrides or {}
        self.calls: list[str] = []

    def __call__(self, texts, src_lang, tgt_lang, **kwargs):
        self.calls.extend(texts)
        out = []
        for text in texts:
            if text in self.overrides:
                translation = self.overrides[text]
            else:
                translation = " ".join(WORDS.get(word.lower(), word) for word in text.split())
            out.append({"translation": translation})
        return out


class TableAligner:
    """Identity links, except for target sentences given explicit links."""

    def __init__(self, links: dict[str, list[tuple[int, int]]] | None = None) -> None:
        self.links = links or {}
        self.calls = 0

    def align(self, sources, targets):
        self.calls += 1
        return [self.links.get(" ".join(t), [(i, i) for i in range(min(len(s), len(t)))])
                for s, t in zip(sources, targets, strict=True)]


def config(tmp_path, **overrides) -> TranslateAlignConfig:
    settings = dict(input="unused", output_dir=str(tmp_path / "out"), tgt_lang="es", language_filter=False,
                    show_progress=False, shard_size=3)
    settings.update(overrides)
    return TranslateAlignConfig(**settings)


def item(parse_text: str, utterance: str | None = None, where: str = "x.tsv:1") -> ParseInput:
    return ParseInput(parse_text, utterance, where)


def test_slots_copied_through_alignment_into_round_tripping_parses(tmp_path):
    items = [item("[IN:CREATE_ALARM set an alarm [SL:DATE_TIME for 7 am ] ]", where="a:1"),
             item("[IN:PLAY_MUSIC play [SL:MUSIC_TYPE music ] by [SL:MUSIC_ARTIST_NAME adele ] ]", where="a:2")]
    kept, discarded, reasons = as_rows(align_batch(items, config(tmp_path), TranslateAlignModels(DictTranslator(),
                                                                                           TableAligner())))
    assert not discarded and not reasons
    assert [row["parse"] for row in kept] == [
        "[IN:CREATE_ALARM pon una alarma [SL:DATE_TIME para 7 am ] ]",
        "[IN:PLAY_MUSIC pon [SL:MUSIC_TYPE música ] de [SL:MUSIC_ARTIST_NAME adele ] ]"]
    for row in kept:
        flat = to_flat(parse(row["parse"]))
        assert flat.tokens == row["tokens"] and flat.slot_tags == row["slot_tags"] and flat.intent == row["intent"]
    assert kept[1]["source"] == "a:2" and kept[1]["source_utterance"] == "play music by adele"
    assert kept[0]["projection_status"] == ["projected"]


def test_discontinuous_slot_becomes_two_slots_of_its_type_and_hybrid_differs(tmp_path):
    # "call mom at home" -> "llama a casa mamá" with CONTACT aligned to words 1 and 3 (split rule)
    translator = DictTranslator({"call mom": "llama a mi mamá querida"})
    aligner = TableAligner({"llama a mi mamá querida": [(0, 0), (1, 1), (1, 3)]})
    items = [item("[IN:CREATE_CALL call [SL:CONTACT mom ] ]")]
    kept, _, _ = as_rows(align_batch(items, config(tmp_path), TranslateAlignModels(translator, aligner)))
    assert kept[0]["parse"] == "[IN:CREATE_CALL llama [SL:CONTACT a ] mi [SL:CONTACT mamá ] querida ]"
    assert kept[0]["projection_status"] == ["split"]
    # hybrid: "mom" is not in the target lexically either, so alignment decides, one-word gaps filled
    kept, _, _ = as_rows(align_batch(items, config(tmp_path, method="hybrid"), TranslateAlignModels(translator, aligner)))
    assert kept[0]["parse"] == "[IN:CREATE_CALL llama [SL:CONTACT a mi mamá ] querida ]"


def test_every_bad_input_is_dropped_with_its_reason_and_line(tmp_path):
    translator = DictTranslator({"call mom": "", "set an alarm": "pon [una alarma"})
    aligner = TableAligner({"pon música": [(0, 0)]})  # "music" gets no link
    items = [
        item("[IN:CREATE_CALL call [SL:CONTACT mom ]", where="f.tsv:1"),  # unbalanced
        item("[IN:GET_DIRECTIONS to [SL:DESTINATION [IN:GET_LOCATION home ] ] ]", where="f.tsv:2"),  # nested
        item("[IN:CREATE_CALL call [SL:CONTACT mom ] ]", utterance="  ", where="f.tsv:3"),  # empty utterance
        item("[IN:CREATE_CALL call [SL:CONTACT mom ] ]", where="f.tsv:4"),  # empty translation
        item("[IN:CREATE_ALARM set an [SL:X alarm ] ]", where="f.tsv:5"),  # bracket in the translation
        item("[IN:PLAY_MUSIC play [SL:MUSIC_TYPE music ] ]", where="f.tsv:6"),  # slot not aligned
        item("[IN:PLAY_MUSIC play [SL:MUSIC_TYPE ] ]", where="f.tsv:7"),  # empty slot
        item("[SL:X play ]", where="f.tsv:8"),  # slot as root
    ]
    kept, discarded, reasons = as_rows(align_batch(items, config(tmp_path), TranslateAlignModels(translator, aligner)))
    assert kept == []
    by_line = {row["source"]: row["reason"] for row in discarded}
    assert by_line == {"f.tsv:1": "invalid_source", "f.tsv:2": "nested_source", "f.tsv:3": "empty_utterance",
                       "f.tsv:4": "no_translation", "f.tsv:5": "invalid_tree", "f.tsv:6": "slots_lost",
                       "f.tsv:7": "invalid_source", "f.tsv:8": "invalid_source"}
    assert all(row["detail"].startswith(row["source"]) for row in discarded)
    assert sum(reasons.values()) == len(items) and set(reasons) <= set(TRANSLATE_ALIGN_REASONS)
    # the same slot kept when asked for: the parse keeps only what was projected, never a wrong tree
    kept, _, _ = as_rows(align_batch(items[5:6], config(tmp_path, keep_incomplete=True),
                               TranslateAlignModels(translator, aligner)))
    assert kept[0]["parse"] == "[IN:PLAY_MUSIC pon música ]" and kept[0]["projection_status"] == ["unaligned"]


def test_wrong_language_counted(tmp_path):
    from crop_hf.engine.language import LanguageIdFilter

    english = "please tell me what the weather will be like tomorrow morning in London"
    translator = DictTranslator({"weather": english})
    kept, discarded, _ = as_rows(align_batch([item("[IN:GET_WEATHER [SL:X weather ] ]")], config(tmp_path),
                                       TranslateAlignModels(translator, TableAligner()),
                                       LanguageIdFilter(["en", "es"])))
    assert not kept and discarded[0]["reason"] == "wrong_language"


def test_tsv_reader_keeps_lines_and_flags_rows_without_a_parse(tmp_path):
    path = tmp_path / "en.tsv"
    path.write_text("utterance\tparse\nset an alarm\t[IN:CREATE_ALARM set an alarm ]\n\nno parse here\n",
                    encoding="utf-8")
    items = list(iter_parse_inputs(path))
    assert [(i.where, i.utterance) for i in items] == [("en.tsv:2", "set an alarm"), ("en.tsv:4", None)]
    with pytest.raises(ValueError, match=r"en\.tsv:1: no column 'query'"):
        list(iter_parse_inputs(path, utterance_column="query"))


def test_run_writes_dataset_card_and_resumes_only_missing_shards(tmp_path):
    parses = ["[IN:CREATE_ALARM set an alarm [SL:DATE_TIME for 7 am ] ]", "[IN:PLAY_MUSIC play [SL:MUSIC_TYPE music ] ]",
              "[IN:BROKEN", "[IN:CREATE_CALL call [SL:CONTACT mom ] ]", "[IN:PLAY_MUSIC play music ]"]
    dataset = datasets.Dataset.from_dict({"parse": parses, "domain": ["alarm", "music", "x", "call", "music"]})
    cfg = config(tmp_path, shard_size=2)
    translator = DictTranslator()
    result = translate_align(cfg, TranslateAlignModels(translator, TableAligner()), inputs=dataset)
    assert result.statistics["train"]["input"] == 5 and result.statistics["train"]["kept"] == 4
    assert result.statistics["train"]["invalid_source"] == 1
    out = tmp_path / "out"
    kept = datasets.load_from_disk(str(out / "dataset"))["train"]
    assert kept["id"] == ["0", "1", "2", "3"] and kept["domain"] == ["alarm", "music", "call", "music"]
    discarded = datasets.load_from_disk(str(out / "discarded"))["train"]
    assert discarded["source"] == ["train:2"] and discarded["reason"] == ["invalid_source"]
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "invalid_source" in card and "| 5 | 4 |" in card
    assert json.loads((out / "statistics.json").read_text())["kept"] == 4

    # a finished run does no work; a missing shard is redone alone
    shard_stats = sorted(out.glob("shards/*/es/*.json"))
    assert len(shard_stats) == 3
    shard_stats[1].unlink()
    again = DictTranslator()
    result = translate_align(cfg, TranslateAlignModels(again, TableAligner()), inputs=dataset)
    assert again.calls == ["call mom"]  # shard 1 = rows 2 (invalid, never translated) and 3
    assert result.statistics["train"]["kept"] == 4


def test_command_with_tiny_m2m100_and_eflomal(tmp_path, tiny_m2m100, shared_data):
    from crop_hf.cli import main

    out = tmp_path / "run"
    code = main(["translate-align", "--input", f"hinglish_top?data_dir={shared_data / 'hinglish-top'}",
                 "--split", "validation", "--max_examples", "12", "--tgt_lang", "es", "--mt_model", str(tiny_m2m100),
                 "--language_filter", "false", "--keep_incomplete", "true", "--num_beams", "1",
                 "--max_new_tokens", "12", "--output_dir", str(out), "--show_progress", "false"])
    assert code == 0
    stats = json.loads((out / "statistics.json").read_text())
    assert stats["input"] == 12 and sum(stats[r] for r in TRANSLATE_ALIGN_REASONS) + stats["kept"] == 12
    kept = datasets.load_from_disk(str(out / "dataset"))["train"]
    for row in kept:  # random weights translate badly, but every kept parse is a valid tree of its tokens
        assert to_flat(parse(row["parse"])).tokens == row["tokens"]
        assert row["source"].startswith("validation:")


def test_hinglish_top_human_rewrite_projects_slots_well(tmp_path, shared_data):
    """English parse -> human code-switched rewrite (standing in for MT), eflomal over all pairs."""
    from crop_hf.alignment import EflomalAligner
    from crop_hf.alignment.symmetrize import symmetrize
    from crop_hf.labels import tags_to_spans

    folder = shared_data / "hinglish-top"
    validation = list(iter_parse_inputs(folder / "validation.tsv"))
    rewrite = {}
    gold = {}
    for line in (folder / "validation.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        en_query, cs_query, _, cs_parse, _ = line.split("\t")
        rewrite[en_query.strip()] = cs_query.strip()
        gold[cs_query.strip()] = cs_parse.strip()
    directions = {}

    class OneEflomalRun:
        """Both settings read the same eflomal samples, each symmetrized its own way: a paired comparison."""

        def __init__(self, symmetrization):
            self.symmetrization = symmetrization

        def align(self, source, target):
            if "run" not in directions:
                directions["run"] = EflomalAligner().align_directions(source, target)
            return [symmetrize(f, r, self.symmetrization) for f, r in zip(*directions["run"], strict=True)]

    def slot_f1(method, symmetrization):
        cfg = config(tmp_path, tgt_lang="hi", method=method, tokenization="whitespace", keep_incomplete=True,
                     symmetrization=symmetrization)
        kept, _, reasons = as_rows(align_batch(validation, cfg, TranslateAlignModels(DictTranslator(rewrite),
                                                                               OneEflomalRun(symmetrization))))
        assert reasons["nested_source"] > 100  # Hinglish-TOP nests intents in slots in ~14% of rows
        tp = predicted = expected = 0
        for row in kept:
            reference = gold[row["utterance"]]
            if "[IN:" in reference[1:]:
                continue  # nested gold parse
            flat = to_flat(parse(reference))
            if flat.tokens != row["tokens"]:
                continue
            ours = set(tags_to_spans(row["slot_tags"]))
            theirs = set(flat.slots)
            tp, predicted, expected = tp + len(ours & theirs), predicted + len(ours), expected + len(theirs)
        assert expected > 1000
        return 2 * tp / (predicted + expected)

    plain = slot_f1("hybrid", "grow-diag-final-and")
    hindi = slot_f1("hybrid?postpositions=hi", "grow-diag-final")
    # eflomal's Gibbs sampler is not seeded: F1 varies from run to run (0.845 seen once, above 0.85
    # otherwise); a broken projection falls far below this bound. On the same samples, the Hindi
    # postposition rule over grow-diag-final links gained 0.015-0.03 in every run measured.
    assert plain > 0.82, plain
    assert hindi > plain + 0.01, (plain, hindi)


def test_tsv_run_reports_bad_lines_by_file_and_line(tmp_path):
    path = tmp_path / "en.tsv"
    path.write_bytes("\n".join([
        "call mom\t[IN:CREATE_CALL call [SL:CONTACT mom ] ]",
        "call dad\t[IN:CREATE_CALL call [SL:CONTACT dad ]",  # unbalanced
        "\t[IN:CREATE_CALL call [SL:CONTACT mom ] ]",  # no utterance column value: the parse's words are used
        "just text, no parse",
    ]).encode("utf-8") + b"\nplay \xff music\t[IN:PLAY_MUSIC play music ]\n")
    result = translate_align(config(tmp_path, input=str(path)), TranslateAlignModels(DictTranslator(), TableAligner()))
    assert result.statistics["train"]["input"] == 5 and result.statistics["train"]["kept"] == 2
    dropped = datasets.load_from_disk(str(tmp_path / "out" / "discarded"))["train"]
    assert dropped["source"] == ["en.tsv:2", "en.tsv:4", "en.tsv:5"]
    assert set(dropped["reason"]) == {"invalid_source"}
    assert "never closed" in dropped["detail"][0] and "not valid UTF-8" in dropped["detail"][2]


def test_processes_split_shards_k_mod_n(tmp_path, monkeypatch):
    from synthesis_fakes import FakeState

    from crop_hf.engine import processes

    parses = [f"[IN:CREATE_CALL call [SL:CONTACT n{i} ] ]" for i in range(7)]
    dataset = datasets.Dataset.from_dict({"parse": parses})
    cfg = config(tmp_path, shard_size=2)
    translators = []
    for index in (1, 0):  # the second process first: the main one merges what both wrote
        monkeypatch.setattr(processes, "process_state", lambda index=index: FakeState(index, 2))
        translators.append(DictTranslator())
        result = translate_align(cfg, TranslateAlignModels(translators[-1], TableAligner()), inputs=dataset)
    assert translators[0].calls == ["call n2", "call n3", "call n6"]  # shards 1 and 3
    assert translators[1].calls == ["call n0", "call n1", "call n4", "call n5"]  # shards 0 and 2
    assert result.statistics["train"]["kept"] == 7
    kept = datasets.load_from_disk(str(tmp_path / "out" / "dataset"))["train"]
    assert kept["source"] == [f"train:{i}" for i in range(7)]


class RecordingTranslator(DictTranslator):
    """DictTranslator that keeps the keyword arguments of each call and refuses utterances containing "refuse"."""

    def __init__(self, overrides=None) -> None:
        super().__init__(overrides)
        self.kwargs = []

    def __call__(self, texts, src_lang, tgt_lang, **kwargs):
        self.kwargs.append({"src_lang": src_lang, "tgt_lang": tgt_lang, **kwargs})
        if any("refuse" in text for text in texts):
            raise ValueError("cannot translate that")
        return super().__call__(texts, src_lang, tgt_lang, **kwargs)


def test_rows_and_drops_hold_exactly_what_the_batch_made(tmp_path, caplog):
    import logging

    translator = RecordingTranslator({"call mom": "  llama mamá  ", "call dad": "   ", "set alarm": "[ x"})
    items = [
        ParseInput("[IN:CREATE_CALL  call [SL:CONTACT mom ]  ]", None, "a:1", "calling"),
        ParseInput("[IN:CREATE_CALL call [SL:CONTACT dad ] ]", None, "a:2"),
        ParseInput("[IN:CREATE_CALL refuse [SL:CONTACT mom ] ]", None, "a:3"),
        ParseInput("[IN:PLAY_MUSIC play [SL:MUSIC_TYPE music ] ]", "play some music", "a:4"),
        ParseInput("[IN:CREATE_ALARM set [SL:X alarm ] ]", None, "a:5"),
        ParseInput("[IN:BROKEN", "broken", "a:6"),
    ]
    cfg = config(tmp_path, num_beams=3, max_new_tokens=9, src_lang="en", tgt_lang="es")
    with caplog.at_level(logging.INFO, logger="crop_hf.augment.translate_align"):
        kept, discarded, reasons = as_rows(align_batch(items, cfg, TranslateAlignModels(
            translator, TableAligner({"pon some música": [(0, 0)]}))))
    assert translator.kwargs[0] == {"src_lang": "en", "tgt_lang": "es", "num_return_sequences": 1, "num_beams": 3,
                                    "max_new_tokens": 9}
    # the batch, then (the translator refused it) each utterance alone: the parse's words unless one is given
    assert translator.calls == ["call mom", "call dad", "play some music", "set alarm"]
    assert kept == [{
        "utterance": "llama mamá", "tokens": ["llama", "mamá"], "intent": "CREATE_CALL",
        "slot_tags": ["O", "B-CONTACT"], "parse": "[IN:CREATE_CALL llama [SL:CONTACT mamá ] ]", "domain": "calling",
        "lang": "es", "source_utterance": "call mom", "source_parse": "[IN:CREATE_CALL call [SL:CONTACT mom ] ]",
        "source": "a:1", "projection_status": ["projected"], "method": "alignment"}]
    assert discarded == [
        {"source": "a:2", "source_parse": "[IN:CREATE_CALL call [SL:CONTACT dad ] ]", "source_utterance": "call dad",
         "translation": "", "reason": "no_translation", "detail": "a:2: the translator returned nothing"},
        {"source": "a:3", "source_parse": "[IN:CREATE_CALL refuse [SL:CONTACT mom ] ]",
         "source_utterance": "refuse mom", "translation": "", "reason": "no_translation",
         "detail": "a:3: the translator refused it: cannot translate that"},
        {"source": "a:4", "source_parse": "[IN:PLAY_MUSIC play [SL:MUSIC_TYPE music ] ]",
         "source_utterance": "play some music", "translation": "pon some música", "reason": "slots_lost",
         "detail": "a:4: MUSIC_TYPE 'music' unaligned"},
        {"source": "a:5", "source_parse": "[IN:CREATE_ALARM set [SL:X alarm ] ]", "source_utterance": "set alarm",
         "translation": "[ x", "reason": "invalid_tree", "detail": "a:5: tokens ['[', 'x'] cannot be written as a parse"},
        {"source": "a:6", "source_parse": "[IN:BROKEN", "source_utterance": "", "translation": "",
         "reason": "invalid_source", "detail": discarded[-1]["detail"]},  # never translated
    ]
    assert discarded[-1]["detail"].startswith("a:6: not a bracket parse (")
    assert reasons == {"no_translation": 2, "slots_lost": 1, "invalid_tree": 1, "invalid_source": 1}
    # one line per reason, with the first parse and why (the refusal's error is in its row's detail)
    lines = [r.getMessage() for r in caplog.records if r.name == "crop_hf.augment.translate_align"]
    assert lines[:3] == [
        "es: 2 parses dropped as no_translation (first: a:2: the translator returned nothing); see discarded/",
        "es: 1 parse dropped as slots_lost (first: a:4: MUSIC_TYPE 'music' unaligned); see discarded/",
        "es: 1 parse dropped as invalid_tree (first: a:5: tokens ['[', 'x'] cannot be written as a parse); "
        "see discarded/"]
    assert len(lines) == 4 and lines[3].startswith("es: 1 parse dropped as invalid_source (first: a:6: not a bracket")


def test_language_filter_detail_and_an_empty_batch(tmp_path):
    class Filter:
        def accepts(self, text, lang):
            assert lang == "es"
            return "english" not in text

        def identify(self, text):
            return "en"

    translator = DictTranslator({"play music": "english words"})
    items = [item("[IN:PLAY_MUSIC play [SL:MUSIC_TYPE music ] ]", where="b:7"), item("[IN:CREATE_CALL call [SL:CONTACT mom ] ]")]
    kept, discarded, _ = as_rows(align_batch(items, config(tmp_path), TranslateAlignModels(translator, TableAligner()), Filter()))
    assert [row["source"] for row in kept] == ["x.tsv:1"]
    assert (discarded[0]["reason"], discarded[0]["detail"]) == ("wrong_language", "b:7: identified as en")
    aligner = TableAligner()
    assert as_rows(align_batch([item("[IN:BROKEN")], config(tmp_path), TranslateAlignModels(DictTranslator(), aligner)))[0] == []
    assert aligner.calls == 0  # nothing left to align: the aligner is not called


def test_hybrid_lexical_matches_count_as_projected(tmp_path):
    # "adele" is found in the translation as is (lexical "found"), "music" through the alignment
    translator = DictTranslator({"play music by adele": "pon música de adele"})
    items = [item("[IN:PLAY_MUSIC play [SL:MUSIC_TYPE music ] by [SL:MUSIC_ARTIST_NAME adele ] ]")]
    kept, discarded, _ = as_rows(align_batch(items, config(tmp_path, method="hybrid"),
                                       TranslateAlignModels(translator, TableAligner())))
    assert not discarded and kept[0]["method"] == "hybrid"
    assert kept[0]["projection_status"] == ["projected", "found"]
    assert kept[0]["parse"] == "[IN:PLAY_MUSIC pon [SL:MUSIC_TYPE música ] de [SL:MUSIC_ARTIST_NAME adele ] ]"
    # a similarity match ("adelle") is kept as projected too
    translator = DictTranslator({"play music by adele": "pon música de adelle"})
    kept, discarded, _ = as_rows(align_batch(items, config(tmp_path, method="hybrid?threshold=70"), TranslateAlignModels(
        translator, TableAligner({"pon música de adelle": [(0, 0), (1, 1)]}))))
    assert not discarded and kept[0]["projection_status"] == ["fuzzy", "fuzzy"]
    assert kept[0]["slot_tags"] == ["O", "B-MUSIC_TYPE", "O", "B-MUSIC_ARTIST_NAME"]


def test_config_checks_and_result_report(tmp_path):
    from pathlib import Path

    from crop_hf.augment.translate_align import STATISTICS_COLUMNS, TranslateAlignResult

    with pytest.raises(ValueError, match=r"^translate-and-align projects the English slots themselves, through a word "
                                         r"alignment or scored by the translation model: method must be one of "
                                         r"alignment, hybrid, insertion, rerank, hybrid_rerank, got 'lexical'$"):
        config(tmp_path, method="lexical")
    with pytest.raises(ValueError, match=r"^shard_size must be at least 1, got 0$"):
        config(tmp_path, shard_size=0)
    assert config(tmp_path, shard_size=1).shard_size == 1
    with pytest.raises(ValueError, match=r"^unknown symmetrization 'diagonal'; expected one of intersection, union"):
        config(tmp_path, symmetrization="diagonal")
    arguments = config(tmp_path).result_arguments()
    assert "output_dir" not in arguments and "batch_size" not in arguments and arguments["tgt_lang"] == "es"
    # CSTOP's symmetrization leaves the fingerprint as it was before the option existed; another changes it
    assert "symmetrization" not in arguments
    assert config(tmp_path, symmetrization="grow-diag-final").result_arguments()["symmetrization"] == "grow-diag-final"
    assert ("input", "kept", *TRANSLATE_ALIGN_REASONS) == STATISTICS_COLUMNS
    out = tmp_path / "out"
    result = TranslateAlignResult(out, {"train": {c: {"input": 3, "kept": 2, "slots_lost": 1}.get(c, 0)
                                                  for c in STATISTICS_COLUMNS}})
    table = result.table().splitlines()
    assert table[0].split() == ["split", *STATISTICS_COLUMNS]
    assert table[-1].split() == ["train", "3", "2", "0", "0", "0", "0", "0", "1", "0"]  # one split: no total row
    for name in ("dataset", "discarded"):
        (out / name).mkdir(parents=True)
    (out / "README.md").write_text("card")
    assert result.report() == (f"{result.table()}\n\ndataset: {out / 'dataset'}\ndiscarded: {out / 'discarded'}"
                               f"\ncard: {out / 'README.md'}")
    assert TranslateAlignResult(Path("o")).statistics == {} and TranslateAlignResult(Path("o")).skipped_shards == {}


def test_merge_writes_the_card_statistics_and_an_empty_dataset_when_nothing_is_kept(tmp_path, monkeypatch):
    import sys
    from pathlib import Path

    path = tmp_path / "en.tsv"
    path.write_text("call mom\t[IN:CREATE_CALL call [SL:CONTACT mom ] ]\nx\t[IN:BROKEN\n", encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["/usr/local/bin/crop-hf", "translate-align", "--input", "en file.tsv"])
    result = translate_align(config(tmp_path, input=str(path)), TranslateAlignModels(DictTranslator(), TableAligner()))
    out = tmp_path / "out"
    assert result.output_dir == Path(str(out)) and result.skipped_shards == {"train": 0}
    assert (out / "statistics.json").read_text(encoding="utf-8") == json.dumps(result.statistics["train"], indent=2)
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "source_datasets" not in card and "pretty_name: CSTOP translate-and-align (es)" in card  # a local file
    assert "  - split: train\n    path: data/train-*\n" in card  # the folder's own data/, as load_dataset reads it
    assert ("English parses were translated into `es` by `facebook/m2m100_418M`, the words aligned by eflomal "
            "(grow-diag-final-and) and the slots projected (alignment projection; a discontinuous slot becomes "
            "separate slots of its type).") in card
    assert "| translation | `facebook/m2m100_418M` |\n| word alignment | `eflomal` |" in card
    assert "crop-hf translate-align --input 'en file.tsv'\n" in card
    # in-memory parses (a Dataset as the configured input): no source in the card; nothing kept: an empty dataset
    dataset = datasets.Dataset.from_dict({"parse": ["[IN:BROKEN"]})
    result = translate_align(config(tmp_path, input=dataset, output_dir=str(tmp_path / "mem")),
                             TranslateAlignModels(DictTranslator(), TableAligner()))
    assert result.statistics["train"]["kept"] == 0
    kept = datasets.load_from_disk(str(tmp_path / "mem" / "dataset"))["train"]
    assert kept.num_rows == 0 and list(kept.features) == ["id", "utterance", "tokens", "intent", "slot_tags", "parse",
                                                          "domain", "lang", "source_utterance", "source_parse",
                                                          "source", "projection_status", "method"]
    assert "source_datasets" not in (tmp_path / "mem" / "README.md").read_text(encoding="utf-8")


def test_round_trip_refuses_what_does_not_read_back_identically():
    from crop_hf.augment.translate_align import _round_trip
    from crop_hf.labels import Span

    assert _round_trip(["a", "b"], "X", [Span(1, 2, "S"), Span(0, 1, "T")]) == "[IN:X [SL:T a ] [SL:S b ] ]"
    assert _round_trip(["a"], "IN:X", []) is None  # read back as intent "X"
    assert _round_trip(["a b"], "X", []) is None and _round_trip(["a"], "X]", []) is None


def test_target_tokens_follow_the_tokenization_and_the_target_language(tmp_path):
    translator = DictTranslator({"call mom": "llama, mamá"})
    items = [item("[IN:CREATE_CALL call [SL:CONTACT mom ] ]")]
    kept, _, _ = as_rows(align_batch(items, config(tmp_path, tokenization="whitespace", keep_incomplete=True),
                               TranslateAlignModels(translator, TableAligner())))
    assert kept[0]["tokens"] == ["llama,", "mamá"]
    kept, _, _ = as_rows(align_batch(items, config(tmp_path, keep_incomplete=True),
                               TranslateAlignModels(translator, TableAligner())))
    assert kept[0]["tokens"] == ["llama", ",", "mamá"]
    # "auto": a language written without spaces is tokenized by character, even a Latin-script output
    kept, _, _ = as_rows(align_batch(items, config(tmp_path, tgt_lang="zh", tokenization="auto", keep_incomplete=True),
                               TranslateAlignModels(DictTranslator({"call mom": "ab"}), TableAligner())))
    assert kept[0]["tokens"] == ["a", "b"] and kept[0]["parse"] == "[IN:CREATE_CALL a [SL:CONTACT b ] ]"


def test_run_reads_the_configured_columns_split_and_limit_and_shows_its_bar(tmp_path, monkeypatch, caplog):
    import logging

    from synthesis_fakes import FakeState, record_bars

    from crop_hf.engine import processes

    path = tmp_path / "en.tsv"
    path.write_text("q\tp\tparse\nCall Mom\t[IN:CREATE_CALL call [SL:CONTACT mom ] ]\t[IN:WRONG x ]\n"
                    "play music\t[IN:PLAY_MUSIC play [SL:MUSIC_TYPE music ] ]\t[IN:WRONG y ]\n"
                    "set an alarm\t[IN:CREATE_ALARM set an alarm ]\t[IN:WRONG z ]\n", encoding="utf-8")
    seen = record_bars(monkeypatch)
    translator = DictTranslator()
    cfg = config(tmp_path, input=str(path), parse_column="p", utterance_column="q", max_examples=2, show_progress=True)
    with caplog.at_level(logging.INFO, logger="crop_hf.engine.jobs"):
        result = translate_align(cfg, TranslateAlignModels(translator, TableAligner()))
    assert translator.calls == ["Call Mom", "play music"] and result.statistics["train"]["input"] == 2  # the q column
    kept = datasets.load_from_disk(str(result.output_dir / "dataset"))["train"]
    assert [parse.split()[0] for parse in kept["parse"]] == ["[IN:CREATE_CALL", "[IN:PLAY_MUSIC"]  # the p column
    assert seen == [{"desc": "translate-align es", "unit": "parse", "disable": False}]
    assert "es shard 0: 2 of 2 kept" in caplog.messages  # the driver's line (crop_hf.engine.jobs)
    # in-memory parses: their split names the rows; other inputs, another shard folder
    dataset = datasets.DatasetDict({"dev": datasets.Dataset.from_dict({"parse": ["[IN:CREATE_CALL call [SL:CONTACT mom ] ]"]})})
    result = translate_align(config(tmp_path, split="dev", output_dir=str(tmp_path / "mem")),
                             TranslateAlignModels(DictTranslator(), TableAligner()), inputs=dataset)
    kept = datasets.load_from_disk(str(tmp_path / "mem" / "dataset"))["train"]
    assert kept["source"] == ["dev:0"] and kept["domain"] == [""]
    items = [ParseInput("[IN:CREATE_CALL call [SL:CONTACT dad ] ]", None, "l:1")]
    translate_align(config(tmp_path, output_dir=str(tmp_path / "mem"), overwrite_output_dir=True),
                    TranslateAlignModels(DictTranslator(), TableAligner()), inputs=items)  # a list of ParseInput, as is
    assert datasets.load_from_disk(str(tmp_path / "mem" / "dataset"))["train"]["source"] == ["l:1"]
    monkeypatch.setattr(processes, "process_state", lambda: FakeState(1, 2))  # not the main process: no merge
    other = translate_align(config(tmp_path, output_dir=str(tmp_path / "o2")),
                            TranslateAlignModels(DictTranslator(), TableAligner()), inputs=items)
    assert other.output_dir == tmp_path / "o2" and other.statistics == {}
    assert not (tmp_path / "o2" / "statistics.json").exists()


def test_every_lost_slot_is_named(tmp_path):
    translator = DictTranslator({"play music by adele": "x y z"})
    aligner = TableAligner({"x y z": [(0, 0)]})
    items = [item("[IN:PLAY_MUSIC play [SL:MUSIC_TYPE music ] by [SL:MUSIC_ARTIST_NAME adele ] ]", where="w:3")]
    _, discarded, _ = as_rows(align_batch(items, config(tmp_path), TranslateAlignModels(translator, aligner)))
    assert discarded[0]["detail"] == "w:3: MUSIC_TYPE 'music' unaligned, MUSIC_ARTIST_NAME 'adele' unaligned"


def test_other_in_memory_parses_start_another_shard_folder(tmp_path):
    # the inputs' datasets fingerprint is part of the run's: new parses are never served old shards
    def run(parse_text):
        rows = datasets.Dataset.from_dict({"parse": [parse_text]})
        return translate_align(config(tmp_path, overwrite_output_dir=True),
                               TranslateAlignModels(DictTranslator(), TableAligner()), inputs=rows)

    first = run("[IN:CREATE_CALL call [SL:CONTACT mom ] ]")
    second = run("[IN:CREATE_CALL call [SL:CONTACT dad ] ]")
    assert second.skipped_shards == {"train": 0} and len(list((tmp_path / "out" / "shards").glob("*/run.json"))) == 2
    kept = datasets.load_from_disk(str(second.output_dir / "dataset"))["train"]
    assert kept["source_utterance"] == ["call dad"] and first.statistics["train"]["kept"] == 1


def test_the_models_align_with_the_configured_symmetrization(tmp_path, tiny_m2m100):
    models = TranslateAlignModels.load(config(tmp_path, symmetrization="grow-diag-final", mt_model=str(tiny_m2m100),
                                              batch_size=3), device="cpu")
    assert models.translator.task == "labeled-translation" and models.translator._batch_size == 3
    assert models.aligner.symmetrization == "grow-diag-final"
    default = TranslateAlignModels.load(config(tmp_path, mt_model=str(tiny_m2m100)), device="cpu")
    assert default.aligner.symmetrization == "grow-diag-final-and"


def test_an_aligner_passed_in_must_symmetrize_as_the_config_says(tmp_path):
    from crop_hf.alignment import EflomalAligner

    items = [item("[IN:CREATE_ALARM set an alarm ]")]
    models = TranslateAlignModels(DictTranslator(), EflomalAligner(symmetrization="grow-diag-final-and"))
    with pytest.raises(ValueError, match=r"symmetrizes with 'grow-diag-final-and' but config\.symmetrization is "
                                         "'grow-diag-final'"):
        translate_align(config(tmp_path, symmetrization="grow-diag-final"), models, inputs=items)
    assert not (tmp_path / "out").exists()
    models.aligner = EflomalAligner(symmetrization="grow-diag-final")
    assert translate_align(config(tmp_path, symmetrization="grow-diag-final"), models, inputs=items).statistics["train"]["input"] == 1


def test_the_step_returns_typed_records_and_a_parse_keeps_its_first_drop_reason(tmp_path):
    from crop_hf.augment.translate_align import AlignedParse, DroppedParse, ParseRecord, align_batch

    translator = DictTranslator({"call dad": ""})
    items = [item("[IN:CREATE_CALL call [SL:CONTACT mom ] ]", where="t:1"),
             item("[IN:CREATE_CALL call [SL:CONTACT dad ] ]", where="t:2"), item("[IN:BROKEN", where="t:3")]
    result = align_batch(items, config(tmp_path), TranslateAlignModels(translator, TableAligner()))
    assert [type(row) for row in result.kept] == [AlignedParse] and result.kept[0].source == "t:1"
    assert all(isinstance(row, DroppedParse) for row in result.dropped) and result.counts == {}
    assert [(row.source, row.reason) for row in result.dropped] == [("t:2", "no_translation"), ("t:3", "invalid_source")]
    record = ParseRecord.read(items[0])
    assert record.alive and record.utterance == "call mom" and record.flat.intent == "CREATE_CALL"
    record.drop("no_translation", "first")
    record.drop("slots_lost", "second")  # a later step cannot overwrite why it was dropped
    assert (record.reason, record.detail, record.alive) == ("no_translation", "t:1: first", False)
    bad = ParseRecord.read(items[2])
    assert bad.reason == "invalid_source" and bad.detail.startswith("t:3: ") and bad.utterance == ""
    bad.drop("no_translation")
    assert bad.reason == "invalid_source"
    assert bad.dropped() == DroppedParse(source="t:3", source_parse="[IN:BROKEN", source_utterance="",
                                         translation="", reason="invalid_source", detail=bad.detail)


def test_a_finished_run_never_loads_its_models(tmp_path, monkeypatch):
    from crop_hf.augment.translate_align import TranslateAlignJob
    from crop_hf.engine.shards import describe_inputs, fingerprint

    items = [item("[IN:CREATE_CALL call [SL:CONTACT mom ] ]")]
    loads = []

    def load(cls, config, device=None):
        loads.append(device)
        return cls(DictTranslator(), TableAligner())

    monkeypatch.setattr(TranslateAlignModels, "load", classmethod(load))
    first = translate_align(config(tmp_path, device="cpu"), inputs=items)
    assert loads == ["cpu"] and first.statistics["train"]["kept"] == 1  # loaded once, on the first shard
    again = translate_align(config(tmp_path, device="cpu"), inputs=items)
    assert loads == ["cpu"] and again.skipped_shards == {"train": 1} and again.statistics == first.statistics
    # the shard folder is named as before the job contract: the result fields, the inputs and the recipe
    cfg = config(tmp_path)
    job = TranslateAlignJob(cfg, inputs=items)
    assert job.store.fingerprint == fingerprint({**cfg.result_arguments(), "inputs": describe_inputs(items),
                                                 "recipe": "translate-align"})
    assert (job.name, job.keys, job.split("es"), job.statistics_columns) == (
        "translate-align", ["es"], "train", ("input", "kept", *TRANSLATE_ALIGN_REASONS))
