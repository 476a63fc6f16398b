"""Learning check of the joint parser on real code-switched data (Hinglish-TOP), from scratch, on CPU.

    nice -n 10 python benchmarks/bench_parser.py                      # ../shared/data/hinglish-top
    python benchmarks/bench_parser.py --steps 300 --quick              # a shorter smoke run
    python benchmarks/bench_parser.py --dev_only --only hierarchical --input_dropout 0.1   # choose a setting

A tiny BERT-style encoder (WordPiece trained on the Hinglish-TOP train text, random weights), first
trained as a masked language model on the train file's text (``--pretrain_steps``: both sides, no
labels; :func:`crop_hf.demo_models.train_masked_lm`), is trained with
:func:`crop_hf.parsing.train.train_parser` on Hinglish-TOP's train file and scored on
all 1,390 validation utterances, which this benchmark treats as an untouched test set: nothing is
selected or tuned on them. Settings are chosen in ``--dev_only`` runs, which carve a dev split from
the train file (``dev_size`` 10%, seed 42 or 1, stratified by intent: 2,993 -> about 2,700 train +
300 dev), score it every ``--eval_every`` steps and keep the model of the best dev point. The
reported runs then train on the whole train file for ``--steps`` and keep the last step's moving
average of the weights (how that was chosen: below; ``--select_on_dev`` carves and selects as the
dev runs do instead). Designs, side by side in one run:

* baseline: the majority intent of the train file with all-O slots;
* **flat CRF** (CSTOP's model, ``max_intent_depth 1``): nested gold trees are trained on with
  each top-level slot over all its words, and cannot be matched (nested exact match 0 by construction);
* **hierarchical** (``max_intent_depth 4``, ``top_tagger shared``): the same encoder and intent
  classifier; for every slot span, a classifier of "words only" or the intent that fills it; and one
  CRF tagger conditioned on an intent that tags the top level's words given the utterance's intent
  (decoded jointly over the three likeliest) and each filled slot's words given the intent filling
  it, recursively (Hinglish-TOP's deepest tree has 4 intent levels; ``--top_tagger words`` tags the
  top level as the flat CRF does);
* the staged recipe for the hierarchical model (English parses first, nested ones included, then
  code-switched with ``init_from``) beside code-switched only; the staged run's stage-1 steps are
  extra (``--en_steps``) and start from the encoder's random weights: the English parses are its
  first stage instead of the masked-LM steps (both would not fit 10 CPU-minutes);
* inference throughput of ``pipeline("semantic-parsing")`` on the raw validation utterances
  against :func:`crop_hf.parsing.predict.predict_parses` on the same batches (the pipeline calls it).

The runs go as three chains side by side (``--jobs``; flat, hierarchical, English then
code-switched), each in a single-threaded process; each run's CPU seconds are its own process's.

Budget: each run stays under 10 CPU-minutes (one torch thread; ``--steps`` keeps it there: with
batches grouped by length, about 18 steps per CPU-second for the hierarchical model with the nested
copies and the moving average, dev scoring included); a run that starts from the pretrained encoder
counts the masked-LM steps' CPU seconds too (one process trains the encoder once for the flat and
the hierarchical run, and each of them is charged all of it), the staged run counts both stages,
and the benchmark prints each run's CPU seconds and checks them.

How each setting was chosen (and on which data):

* the checkpoint of every ``--dev_only`` run (which learning-curve point is saved): the **dev split**
  carved from train (best exact match), never validation; the reported runs keep their last step
  (the last point below says why).
* ``--slot_substitution 4`` and ``--input_dropout 0.15`` (the training rows get 4 copies in which
  each top-level slot is, with probability 0.5, swapped for a same-name filler of another row, and
  15% of the sub-words of each batch become ``[UNK]``): the **dev split**, with
  ``--dev_only --only hierarchical`` runs (validation is not scored in that mode). Each row is one
  6,000-step hierarchical run; best = the kept dev point, last 8 = the mean of the last 8 dev points
  (the plateau, less noisy than the best point); 294 dev rows, 38 nested:

      setting (changed from the row "none")        best  flat  nested  last 8  CPU-s
      none (the settings below, as inherited)      46.6  50.4    21.1    44.6    391
      English side mixed in (--en_weight 1)        45.2  48.8    21.1    42.8    395
      encoder dropout 0.2                          43.9  48.4    13.2    42.7    429
      intent from the mean hidden state            44.9  49.6    13.2    43.1    392
      whole-word vocabulary (--max_piece 0)        43.9  48.4    13.2    42.9    391
      hidden 256 (4,000 steps)                    over the CPU budget (stopped after 15 CPU-minutes)
      slot substitution 2                          46.9  51.2    18.4    44.8    418
      input dropout 0.1                            46.9  51.6    15.8    45.1    386
      substitution 2 + input dropout 0.1           49.7  53.9    21.1    47.9    440
        ... + whole-word vocabulary                48.3  52.7    18.4    47.1    401
        ... with 7,500 steps                       46.6  50.8    18.4    45.0    531
      substitution 4 + input dropout 0.15          51.0  55.1    23.7    48.2    432
      substitution 8 + input dropout 0.2           51.0  56.6    13.2    49.1    419
      substitution 4 + input dropout 0.15, lr 2e-3 50.0  53.9    23.7    47.7    447
      substitution 4 + input dropout 0.15, lr 5e-3 46.9  51.2    18.4    44.8    506
      with seed 1 (another dev split and init): none 45.9 / 23.7 nested / 44.9 last 8;
      substitution 4 + input dropout 0.15: 50.3 / 28.9 / 48.1 (the gain holds)

  4 / 0.15 was kept: the best dev exact match (tied with 8 / 0.2, which is higher on the plateau
  but lower on the nested dev rows) at half the copies. The two regularisers help together, not
  alone; every other change was within the dev split's noise (the 7,500-step run of the same
  settings shows how large that is: about 3 points) or worse.
* ``--nested_copies 2`` and ``--ema_decay 0.998`` (more copies of each nested training row before
  substitution; a moving average of the weights, which the dev split scores and the run saves): the
  **dev split**. They won there but first did not fit the CPU budget (a later session's runs; same
  columns, on top of substitution 4 + input dropout 0.15):

      setting                                                     seed  best  flat  nested  last 8  CPU-s
      none                                                        42  51.0  55.1    23.7    48.2    432
      moving average 0.998                                        42  50.7  55.5    18.4    49.7    441
      nested copies 2                                             42  51.4  56.6    15.8    49.9    480
      nested copies 2 + moving average 0.998                      42  51.4  55.9    21.1    50.6    519
        ... with 5,000 steps (to fit the budget)                  42  48.0  52.3    18.4    47.5    489
      none                                                         1  50.3  53.5    28.9    48.1    426
      moving average 0.998                                         1  50.0  53.1    28.9    48.9    421
      nested copies 2                                              1  50.7  53.1    34.2    49.7    453
      nested copies 2 + moving average 0.998                       1  51.4  54.3    31.6    50.9    585
        ... with 5,000 steps (to fit the budget)                   1  47.6  50.8    26.3    47.0    484

  (CPU seconds of these runs grow with what else ran on the two cores.) Both together gave the best
  dev point on both seeds (+0.4, +1.1) and the highest plateau (+2.4, +2.8); the nested dev rows (38)
  move by ±8 points from run to run, too few to choose on. But the nested copies cost 19% more CPU
  per step (longer rows, more inner spans; 1,000-step runs alone: 96 CPU-s without them, 114 with
  them, 94 with the moving average alone), and a run of this benchmark with both (``--ema_decay
  0.998 --nested_copies 2 --en_steps 1000``) went over 10 CPU-minutes: validation exact match flat
  CRF 49.1 (526 CPU-s), hierarchical **50.9**, nested 18.0 (638 CPU-s), staged 50.6 (754 CPU-s);
  cutting the steps to 5,000 to fit cost 3-4 dev points (above). Batches grouped by length made
  room for them (next point).
* ``--group_by_length`` (on): a speed setting whose quality was checked on the **dev split**.
  Random batches of Hinglish-TOP's training rows pad to 2.1x their real sub-words, grouped ones to
  1.03x, and a 6,000-step hierarchical run took 303 instead of 430 CPU-s with the same or better dev
  scores. The session that added it ran these (same columns; all with substitution 4 + input
  dropout 0.15; "both" = nested copies 2 + moving average 0.998; CPU-s with two to four runs
  sharing the two cores):

      setting                                                     seed  best  flat  nested  last 8  CPU-s
      grouped by length                                           42  51.7  55.1    28.9    49.5    302
      grouped by length + both                                    42  51.0  55.1    23.7    49.7    336
        ... + a third encoder layer                               42  51.4  55.5    23.7    50.3    415
        ... with 8,000 steps                                      42  50.0  54.3    21.1    48.7    472
        ... with 4 nested copies instead of 2                     42  50.3  54.7    21.1    48.7    396
        ... with pieces of up to 4 characters                     42  49.7  53.9    21.1    48.1    360
        ... with a word's mean sub-word state (not first) to tag  42  51.0  55.5    21.1    50.4    344
        ... with 30% of fillers drawn from the nested ones        42  48.0  52.0    21.1    47.4    381
        ... with a moving average of 0.999                        42  49.3  53.9    18.4    48.7    429
        ... with batches of 48 utterances                         42  50.0  55.1    15.8    49.3    551
      grouped by length                                            1  50.7  55.5    18.4    48.9    305
      grouped by length + both                                     1  51.7  54.3    34.2    50.9    334
        ... + a third encoder layer                                1  49.3  52.3    28.9    48.6    424
        ... with 8,000 steps                                       1  50.7  53.5    31.6    49.8    467
        ... with 4 nested copies instead of 2                      1  49.7  52.0    34.2    48.2    394
        ... with pieces of up to 4 characters                      1  50.3  53.1    31.6    50.0    359
        ... with a word's mean sub-word state (not first) to tag   1  51.0  54.3    28.9    48.9    344
        ... with 30% of fillers drawn from the nested ones         1  49.3  52.3    28.9    48.5    370
        ... with a moving average of 0.999                         1  51.4  54.3    31.6    50.3    427
        ... with batches of 48 utterances                          1  52.7  55.9    31.6    51.5    545

  Grouped + both has the best mean of the two seeds (51.35 best, 50.3 last 8) and fits the budget;
  batches of 48 tie it (51.35, 50.4) at 1.4x the CPU; nothing on top of it helped (the mean sub-word
  state and substitution that prefers nested fillers, which doubles the nested share of the
  training rows, were tried as options and left out).
  Decoding restricted to the slots each intent has in the training rows (and the intents each slot
  holds) moved the two kept models' dev exact match by -0.3 and +0.3: not kept.
* ``--top_tagger shared`` (the hierarchical models' top-level slots tagged by the inner tagger,
  conditioned on the utterance's intent, and decoded jointly over the three likeliest intents): the
  **dev split**, in a later session's runs (same columns, on top of grouped + both; "inner
  substitution" also swapped the words-only slots inside nested intents in the substituted copies,
  an option written, tested and removed; seeds 7 and 3 carve other dev splits, 35 and 30 nested rows;
  CPU-s with four runs sharing the two cores):

      setting                                                     seed  best  flat  nested  last 8  CPU-s
      grouped + both, top tagger from the words alone (as above)  42  51.0  55.1    23.7    49.7    336
      ... top tagger conditioned on the intent, own layers        42  52.4  56.6    23.7    51.6    424
      ... top tagger shared with the inner levels                 42  54.8  59.4    23.7    53.6    419
      ... shared, with inner substitution                         42  48.3  52.0    23.7    47.8    461
      ... words alone, with inner substitution                    42  50.0  52.3    34.2    49.1    408
      grouped + both, top tagger from the words alone (as above)   1  51.7  54.3    34.2    50.9    334
      ... top tagger conditioned on the intent, own layers         1  50.7  53.1    34.2    50.1    434
      ... top tagger shared with the inner levels                  1  51.4  54.3    31.6    50.1    420
      ... shared, with inner substitution                          1  50.3  52.3    36.8    49.1    420
      ... words alone, with inner substitution                     1  52.7  55.1    36.8    50.7    404
      ... top tagger shared with the inner levels                  7  51.4  55.6    20.0    50.7    371
      ... words alone, with inner substitution                     7  48.6  52.5    20.0    48.0    359
      ... top tagger shared with the inner levels                  3  51.0  55.3    13.3    50.4    371
      ... words alone, with inner substitution                     3  48.3  52.3    13.3    47.2    355

  The shared tagger has the best mean dev exact match of seeds 42 and 1 (53.1, from 51.35; last 8
  51.85, from 50.3); inner substitution (the one change aimed at the nested rows) raised their
  nested dev score (35.5 from 29.0) at an equal overall score, so both were run on two more dev
  splits, where the shared tagger led by 2.8 and 2.7 points and the nested rows tied. Kept: the
  shared tagger (on the four splits 52.15 best, 51.2 last 8; nested 22.2 against 26.1).
* ``--pretrain_steps 2000`` (masked-LM steps of the encoder on the text of the train rows, both
  sides, before the parser sees a label; in ``--dev_only`` runs the dev rows' text is left out): the
  **dev split**, in a later session's runs (same columns, on top of the shared top tagger; CPU-s
  with two runs sharing the two cores, the parser's training + the masked-LM steps; the last three
  rows of a seed are designs aimed at the nested trees' top-level spans, written, tried and removed;
  the 2,000-step runs computed the vocabulary head at every position, the kept code only at
  the masked ones, the same loss at about 0.6x the CPU):

      setting                                                     seed  best  flat  nested  last 8  CPU-s
      shared top tagger (as above)                                42  54.8  59.4    23.7    53.6    419
      ... masked-LM pretraining, 2,000 steps (kept)               42  55.8  59.4    31.6    55.1    291 + 251
      ... masked-LM pretraining, 3,500 steps                      42  54.8  58.6    28.9    54.1    265 + 288
      ... slot loss weight 2 (tags against intent)                42  52.7  57.4    21.1    51.3    290
      ... a bidirectional LSTM over the word states               42  50.7  54.7    23.7    49.7    376
      ... a slot that holds an intent tagged as its own name      42  51.4  56.2    18.4    50.3    303
      ... segment (semi-Markov) scores instead of the CRF         42  50.3  55.1    18.4    49.1    602
      shared top tagger (as above)                                 1  51.4  54.3    31.6    50.1    420
      ... masked-LM pretraining, 2,000 steps (kept)                1  51.0  53.1    36.8    49.7    285 + 249
      ... masked-LM pretraining, 3,500 steps                       1  55.1  58.6    31.6    53.7    260 + 281
      ... slot loss weight 2 (tags against intent)                 1  52.4  56.2    26.3    51.2    293
      ... a bidirectional LSTM over the word states                1  52.4  55.1    34.2    51.2    410
      ... a slot that holds an intent tagged as its own name       1  51.7  54.3    34.2    50.9    309
      ... segment (semi-Markov) scores instead of the CRF          1  50.3  52.0    39.5    48.9    597
      shared top tagger (as above)                                 7  51.4  55.6    20.0    50.7    371
      ... masked-LM pretraining, 2,000 steps (kept)                7  52.4  56.4    22.9    51.2    279 + 242
      shared top tagger (as above)                                 3  51.0  55.3    13.3    50.4    371
      ... masked-LM pretraining, 2,000 steps (kept)                3  52.7  56.8    16.7    52.1    279 + 243

  Pretraining is the only change in this table that raised the nested dev rows on every split
  (mean of four 22.2 -> 27.0) while raising the overall one (52.15 -> 52.98 best, 51.2 -> 52.03 last
  8; seed 1 lost 0.4). 3,500 steps did better overall on seeds 42 and 1 (54.95 against 53.4) but
  cost 285 CPU-s, which with the parser's 290-310 leaves no margin under 10 CPU-minutes; 2,000 (about
  160 CPU-s with the masked-only head) was kept. The removed designs: "a slot that holds an intent
  tagged as its own name" renamed such slots ``DESTINATION@GET_LOCATION`` in the train file (scored
  with the names put back), so the tagger marks nesting slots apart; "segment scores" scored each
  slot as a whole (its words' tag scores plus a score of its first, last and mean word state, length
  and intent) over every segmentation (a semi-Markov CRF) at every level, at twice the CPU.
  Decoding changes, scored on the four kept dev models of the shared tagger without retraining, did
  not move them (52.13 exact, 22.70 nested): choosing among the intent candidates by the whole
  tree's probability, or among 5 of them instead of 3.
* the masked-LM steps mask sub-words (``--no-pretrain_whole_words``, ``--no-pretrain_pairs``) and
  ``--lr 3e-3`` stays after them: the **dev split**, in a later session's runs (same columns, on top
  of the kept 2,000 sub-word steps; CPU-s the parser's + the masked-LM steps', two runs sharing the
  two cores; "whole words" masks every sub-word of a drawn word, ``train_masked_lm(whole_words=True)``;
  "pairs" makes each line a train row's two sides joined by ``[SEP]``, 32 pairs a step, so that a
  masked word can be read off the translation, a translation LM):

      setting                                                     seed  best  flat  nested  last 8  CPU-s
      masked-LM 2,000 steps, sub-words (kept, as above)           42  55.8  59.4    31.6    55.1    291 + 251
      ... whole words, 2,000 steps                                42  54.4  57.4    34.2    53.7    270 + 180
      ... whole words, 3,000 steps                                42  56.8  60.9    28.9    56.3    270 + 277
      ... two sides as one line, 2,000 steps                      42  54.4  59.0    23.7    53.1    291 + 168
      ... learning rate 2e-3 (sub-words, 2,000 steps)             42  55.8  59.4    31.6    54.8    268 + 178
      ... nested copies 4 (sub-words, 2,000 steps)                42  55.1  59.8    23.7    54.3    298 + 179
      masked-LM 2,000 steps, sub-words (kept, as above)            1  51.0  53.1    36.8    49.7    285 + 249
      ... whole words, 2,000 steps                                 1  55.1  57.8    36.8    52.9    268 + 183
      ... whole words, 3,000 steps                                 1  54.4  57.8    31.6    53.4    273 + 282
      ... two sides as one line, 2,000 steps                       1  52.7  55.5    34.2    51.7    292 + 173
      ... learning rate 2e-3 (sub-words, 2,000 steps)              1  53.1  55.9    34.2    51.5    267 + 180
      ... nested copies 4 (sub-words, 2,000 steps)                 1  53.1  55.5    36.8    52.1    299 + 182
      masked-LM 2,000 steps, sub-words (kept, as above)            7  52.4  56.4    22.9    51.2    279 + 242
      ... whole words, 2,000 steps                                 7  51.4  55.2    22.9    51.0    271 + 185
      ... whole words, 3,000 steps                                 7  52.4  56.8    20.0    51.4    311 + 288
      ... learning rate 2e-3 (sub-words, 2,000 steps)              7  51.4  55.2    22.9    50.6    269 + 172
      masked-LM 2,000 steps, sub-words (kept, as above)            3  52.7  56.8    16.7    52.1    279 + 243
      ... whole words, 2,000 steps                                 3  52.7  56.8    16.7    51.5    273 + 181
      ... whole words, 3,000 steps                                 3  52.7  57.2    13.3    50.8    304 + 288
      ... learning rate 2e-3 (sub-words, 2,000 steps)              3  52.7  56.4    20.0    51.5    272 + 169

  Whole words for 2,000 steps moved the four splits' means by +0.4 best (53.4 against 52.98), +0.25
  last 8 and +0.65 nested (one split's one row), within their noise, for 25 more CPU-s; for 3,000
  steps by +1.1 best and +0.95 last 8, but the nested rows fell on every split (mean 23.45 against
  27.0), the nested trees being what this benchmark is short of, and two of its runs came within 10
  CPU-seconds of the budget. The two sides as one line lowered the nested rows on both splits and
  left the rest where it was. A lower learning rate for the parser after the pretraining (2e-3,
  the kept 3e-3 having been checked before it) moved the means by +0.27 best, +0.07 last 8 and
  +0.2 nested: noise. Twice the nested copies (4), the one change here aimed at the nested trees,
  left seed 1's nested rows where they were and lost three of seed 42's. None was kept; the
  masking choices stay as options.
* the reported runs train on the whole train file and keep the last step (with the moving
  average): chosen on **held-out carves of the train file**, never validation. With 10% of the
  train rows held out as a stand-in test set (seeds 142 and 101), a run that carved a dev split from
  the rest and kept its best point scored 49.0 / 47.3 on the held-out rows, one that trained on all
  the rest and kept its last step 49.7 / 48.6 (grouped + both, 6,000 steps): the 10% more training
  rows are worth more than selecting on them once the moving average flattens the late curve.
* encoder size (2 layers, hidden 128), vocabulary 4,000 (pieces of up to 3 characters), learning
  rate 3e-3, encoder dropout 0.1, one torch thread: first set by an earlier session while watching
  **Hinglish-TOP validation** (issue 28 says so); the dev runs above re-checked dropout, pooling,
  vocabulary, width and (with the regularisers) the learning rate on the **dev split** and kept them.
* ``--steps 6000`` (from 3,000): the **dev split** (the hierarchical model's dev exact match was
  still rising at 3,000 steps; 7,500 and, with the moving average, 8,000 did not help, above).
  ``--en_steps 1500``: a priori, so that both stages fit 10 CPU-minutes; the English stage also gets
  the input dropout (substitution and nested copies are for the code-switched rows).
* the flat CRF baseline trains with the same recipe (the pretrained encoder, substitution, input
  dropout, steps), so the two rows differ only in the decoder.
* hierarchical decoder (span layers as wide as the encoder, depth 4, same learning rate and
  loss weights as the flat model): not tuned; depth 4 is read off the **train file** (deepest tree).
* dev size 10% and seeds 42 and 1: a priori (the package's usual seed and one more); not tuned.

Where the hierarchical model loses, read on the **dev split** (``python`` over the kept model of the
"none" row above): of 256 flat dev rows, 129 exact, 40 with a wrong intent, 82 with wrong top-level
slot spans, 5 with wrong slot names; of the 38 nested rows, 8 exact, 9 wrong intent, 17 wrong
top-level spans, 3 wrong slot names and 1 wrong inside the nested intent. The top-level tagger's
span boundaries (postpositions such as ``ke liye`` and ``ko``, which the annotators include or
leave out from one row to the next, and unseen names) are what holds exact match back. With the
kept settings and the shared top tagger (seed 42's dev model): of 256 flat dev rows, 152 exact, 34
wrong intent, 61 wrong top-level spans, 9 wrong slot names; of the 38 nested rows, 9 exact, 8 wrong
intent, 20 wrong top-level spans (most often the slot that holds the nested intent: missed, as for
"school" or "parkway", split into the inner intent's own slots, or a word too long, as "Saturday
ke"), 1 wrong slot name. The shared tagger's gain is on the flat rows' spans (71 -> 61 wrong).
Over the four shared-tagger dev models, the top level is right (intent and every top-level slot) in
66% of the flat rows with one slot and 43% of the nested ones with one, 53% / 37% with two, 27% /
11% with three: of the 161 gold slots that hold an intent only 45% are predicted exactly (70% of the
slots that hold words); 20% come out shorter under the same name and 21% as other slots (mostly the
inner intent's own, at the top level: ``[SL:DATE_TIME 10 pm ko ] [SL:TODO mere show ke liye tv
kholne ]`` for a ``TODO`` holding a ``GET_TODO``). Neither the LSTM, the renamed slots nor the
segment scores above moved that share (40-44%).

Decoding is not what loses them (2026-12-04, with the tools added for it):
:func:`crop_hf.parsing.predict.score_parses` gives the model's log-probability of any tree as
decoding scores its own, and ``--dev_only`` runs print how many wrong dev trees have a gold tree the
model scores above its prediction (the greedy decoder's misses) and where the nested rows' wrong
trees first differ from gold (``errors`` of :func:`crop_hf.metrics.parsing.parse_scores`: the
intent, the top-level slots, or inside a slot). Over the 16 saved dev models of the masked-LM rows
above (four splits), 8 of the 1,764 wrong flat dev trees and 2 of the 417 wrong nested ones were
the decoder's misses; the model scores every other gold tree below its own prediction, so no
search (a beam over the tags, every intent, nesting decided jointly with the top level) would
return it. Given the gold top level (intent and top-level tags), the same
models get 311 of the 575 nested dev trees right (54%), against 158 unaided: the top level is right
on 196 (34%); below it, 74% of the gold slots that hold an intent are decided right (19% called
words only, 7% another intent) and the tags of 75% of the nested intents are right. Lowering the
"words only" decision's score at decoding (by 0.5 to 3) changed no nested dev tree and lost flat
ones (pooled 53.64 -> 52.59). A masked-word loss at the input-dropout positions during the parser's
training (a prototype: weight 1, a vocabulary head tied to the embeddings) scored 55.1 / 58.6 / 31.6
/ 53.6 (seed 42) and 54.8 / 59.0 / 26.3 / 53.4 (seed 1; best / flat / nested / last 8) at about 1.7x
the parser's CPU, over the budget and lower on one split's nested rows: not kept. The kept setting,
run again with the current code (its masked-LM head scores the masked positions only, as in the
reported runs; the table's 2,000-step rows scored every position, the same loss summed in another
order): 53.4 / 57.4 / 26.3 / 52.6 (seed 42), 53.7 / 56.6 / 34.2 / 52.4 (seed 1), the same mean as the
table's row (53.55 against 53.4) and a measure of what a change of summation order alone moves; its
nested rows' wrong trees first differ at the intent / top-level slots / inside 7 / 17 / 4 and 4 / 19
/ 2, and 1 of the two runs' 273 wrong dev trees was a decoder miss.

Last full runs (``python benchmarks/bench_parser.py`` and ``... --seed 1``, 2026-12-03, 2 cores,
one at a time, about 11.5 minutes wall each; validation, percent; seed 42 / seed 1; the runs before
the masked-LM pretraining, same seeds and otherwise the same settings, in brackets; nothing was
chosen on these figures; CPU-s include the pretraining's 153 / 158 where a run starts from it):

    run                                    exact                    nested                   CPU-s
    majority intent + all-O slots            0.9 / 0.9                0.0 / 0.0                -
    flat CRF, code-switched only            52.1 / 51.1 (49.5/50.8)   0.0 / 0.0               362 / 359
    hierarchical, code-switched only        55.9 / 55.3 (54.0/52.4)  27.0 / 21.2 (24.3/21.7) 418 / 409
    hierarchical, staged: English, then CS  45.3 / 54.2 (45.3/54.2)  15.3 / 21.7 (15.3/21.7) 399 / 369
    pipeline / predict_parses: flat 0.99 / 0.98, hierarchical 0.98 / 1.00

Per domain (hierarchical, seed 42 / 1): alarm 64.3 / 64.3, event 44.1 / 37.6, messaging 62.5 / 61.7,
music 61.7 / 64.2, navigation 37.1 / 36.0, reminder 25.3 / 22.0, timer 68.9 / 71.1, weather 74.2 /
73.7. Pretraining moved the two seeds' mean by +2.4 overall for the hierarchical model (53.2 ->
55.6) and +1.45 for the flat CRF (50.15 -> 51.6), but only +1.1 on the 189 nested trees (23.0 ->
24.1; seed 1 lost 0.5); the staged run, which does not use it, repeats its earlier figures exactly.
Issue 28's targets: 52 overall is reached (55.9 and 55.3), 30 on the nested rows is not (27.0, 21.2).
Seed 42 again with the current code (2026-12-04, which changed nothing the training computes: a
500-step run gave the same learning curve before and after): flat CRF 51.9, hierarchical 55.4 (27.5
on the nested trees), staged 45.8, within half a point of the figures above (runs of the same
settings are not bit-identical here); CPU-s 448 / 511 / 385, the masked-LM steps 197 of them;
pipeline / predict_parses 1.03 and 1.04. Of the hierarchical model's 137 wrong nested trees, 21.2%
first differ from gold at the intent, 65.7% at the top-level slots and 13.1% inside a slot: the
top-level tagger, not the nested decoder, is what the nested trees wait for.
"""

from __future__ import annotations

import argparse
import atexit
import logging
import os
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hinglish-top"


def row(name: str, scores: dict, seconds: float | None) -> str:
    took = f"{seconds:7.0f}" if seconds is not None else "      -"
    return (f"{name:<42} {100 * scores['exact_match']:6.1f} {100 * scores['flat']['exact_match']:6.1f} "
            f"{100 * scores['nested']['exact_match']:7.1f} {100 * scores['unseen']['exact_match']:7.1f} "
            f"{100 * scores['intent_accuracy']:7.1f} {100 * scores['slot_f1']:7.1f} {took}")


def decoder_misses(model, tokenizer, ds, dev_size: float, seed: int) -> dict[str, tuple[int, int]]:
    """``{"flat"/"nested": (wrong dev trees, those whose gold tree the model scores above its prediction)}``.

    The dev split is carved again as training carved it. A gold tree the model prefers to its own
    prediction is one the greedy decoder missed; the others a better search would not mend.
    """
    import math

    from crop_hf.metrics.parsing import canonical_parse
    from crop_hf.parsing.data import dev_split, load_parse_rows
    from crop_hf.parsing.predict import predict_parses, score_parses

    rows = load_parse_rows("hinglish_top", "train", dataset=ds)
    rows = rows.select(dev_split(rows, dev_size, seed)[1])
    predictions = predict_parses(model, tokenizer, rows["tokens"])
    gold = score_parses(model, tokenizer, rows["parse"])
    counts = {"flat": [0, 0], "nested": [0, 0]}
    for prediction, text, score, nested in zip(predictions, rows["parse"], gold, rows["nested"], strict=True):
        if canonical_parse(prediction.parse) != canonical_parse(text):
            counts["nested" if nested else "flat"][0] += 1
            counts["nested" if nested else "flat"][1] += score > math.log(prediction.score) + 1e-6
    return {key: tuple(value) for key, value in counts.items()}


def run_chain(chain: list[dict]) -> list[dict]:
    """Train and score each run of a chain in turn (in a worker process); a later run may start from an earlier one."""
    import json

    import torch
    import transformers
    from transformers import AutoTokenizer

    import crop_hf
    from crop_hf.modeling import JointIntentSlotModel
    from crop_hf.parsing.arguments import ParserDataArguments, ParserModelArguments, ParserTrainingArguments
    from crop_hf.parsing.evaluate import evaluate_parser
    from crop_hf.parsing.train import train_parser

    logging.basicConfig(level=logging.WARNING)
    transformers.logging.set_verbosity_error()
    torch.set_num_threads(1)
    finished = []
    for run in chain:
        ds = crop_hf.load_dataset("hinglish_top", data_dir=run["data_dir"], cache_dir=run["cache"])
        start = time.process_time()
        result = train_parser(
            ParserModelArguments(model_name_or_path=run["encoder"], init_from=run["init_from"],
                                 max_intent_depth=run["depth"], **run["model_options"]),
            ParserDataArguments(train_sources=run["sources"], train_weights=run["weights"], eval_split=None,
                                dev_size=run["dev_size"], **run["data_options"]),
            ParserTrainingArguments(output_dir=run["out"], learning_rate=run["lr"], max_train_steps=run["steps"],
                                    max_train_minutes=run["minutes"],
                                    eval_steps=run["eval_every"] if run["dev_size"] else None,
                                    seed=run["seed"], show_progress=False, **run["training_options"]),
            datasets={"hinglish_top": ds})
        cpu_seconds = time.process_time() - start
        selected = json.loads((Path(run["out"]) / "all_results.json").read_text()).get("dev", {}).get("selected_step")
        # the code-switched dev part (the first source's) at every learning-curve point
        dev = [(p["step"], p["scores"]["dev"][run["sources"][0]]) for p in result.history]
        curve = " ".join(f"{step}:{100 * scores['exact_match']:.1f}" for step, scores in dev)
        kept = next((scores for step, scores in dev if step == selected), None)
        scores = misses = None
        model = JointIntentSlotModel.from_pretrained(run["out"])
        tokenizer = AutoTokenizer.from_pretrained(run["out"])
        if not run["dev_only"]:
            scores, _ = evaluate_parser(model, tokenizer, ds["validation"], seen=ds["train"])
        elif run["dev_size"] and run["sources"] == ["hinglish_top"]:
            misses = decoder_misses(model, tokenizer, ds, run["dev_size"], run["seed"])
        finished.append({"name": run["name"], "out": run["out"], "encoder": run["encoder"],
                         "steps": result.completed_steps, "curve": curve, "selected": selected, "dev": kept,
                         "cpu_seconds": cpu_seconds, "scores": scores, "misses": misses})
    return finished


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data_dir", default=str(DEFAULT_DATA))
    parser.add_argument("--steps", type=int, default=6000, help="most optimizer steps on code-switched data per run")
    parser.add_argument("--en_steps", type=int, default=1500, help="most steps on the English parses (staged stage 1)")
    parser.add_argument("--minutes", type=float, default=30,
                        help="wall-clock cap of each run and stage (max_train_minutes), a safety net on a shared "
                             "machine; the CPU budget is kept by --steps (each run's CPU seconds are printed)")
    parser.add_argument("--eval_every", type=int, default=250, help="steps between dev-split scorings")
    parser.add_argument("--dev_size", type=float, default=0.1,
                        help="dev split carved from train (fraction) in --dev_only runs and with --select_on_dev")
    parser.add_argument("--select_on_dev", action="store_true",
                        help="the reported runs also carve the dev split and keep its best point (default: they "
                             "train on the whole train file and keep the last step's averaged weights)")
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=4000)
    parser.add_argument("--max_piece", type=int, default=3,
                        help="longest vocabulary piece in characters (0: the unigram model's whole vocabulary)")
    parser.add_argument("--dropout", type=float, default=0.1, help="encoder dropout (tiny.py builds it with 0)")
    parser.add_argument("--seed", type=int, default=42, help="training seed (weights, dropout, batch order, dev split)")
    parser.add_argument("--classifier_dropout", type=float, default=0.1, help="dropout before the parser's heads")
    parser.add_argument("--intent_pooling", choices=["first", "mean"], default="first",
                        help="intent classifier input: the first hidden state or the mean")
    parser.add_argument("--top_tagger", choices=["words", "intent", "shared"], default="shared",
                        help="the hierarchical models' top-level slot tagger (the flat CRF keeps 'words')")
    parser.add_argument("--slot_loss_weight", type=float, default=1.0,
                        help="weight of the slot taggers' loss against the intent loss")
    parser.add_argument("--pretrain_steps", type=int, default=2000,
                        help="masked-language-model steps of the encoder on the train file's text (both sides; in "
                             "--dev_only runs without the dev rows) before the code-switched-only runs, whose CPU "
                             "seconds include them (0: none; the staged recipe's English stage starts from random "
                             "weights)")
    parser.add_argument("--pretrain_whole_words", action=argparse.BooleanOptionalAction, default=False,
                        help="the masked-LM steps mask whole words (all their sub-words) instead of sub-words")
    parser.add_argument("--pretrain_pairs", action=argparse.BooleanOptionalAction, default=False,
                        help="each masked-LM line is a train row's two sides joined by [SEP] (translation LM: a "
                             "masked word can be read off the other side), 32 pairs per step instead of 64 lines")
    parser.add_argument("--batch_size", type=int, default=32, help="utterances per optimizer step")
    parser.add_argument("--en_weight", type=float, default=0.0,
                        help="also train the code-switched runs on the English side of the same train rows, "
                             "at this sampling weight (0: code-switched only)")
    parser.add_argument("--input_dropout", type=float, default=0.15,
                        help="share of training sub-words replaced by the unknown token (0: off)")
    parser.add_argument("--slot_substitution", type=int, default=4,
                        help="copies of the code-switched training rows with swapped slot fillers (0: none)")
    parser.add_argument("--ema_decay", type=float, default=0.998,
                        help="score and save a moving average of the weights with this decay per step (0: off)")
    parser.add_argument("--nested_copies", type=int, default=2,
                        help="extra copies of the code-switched training rows whose tree is nested (0: none)")
    parser.add_argument("--group_by_length", action=argparse.BooleanOptionalAction, default=True,
                        help="batch utterances of similar length (less padding, cheaper steps)")
    parser.add_argument("--quick", action="store_true", help="skip the staged runs")
    parser.add_argument("--only", nargs="+", choices=["flat", "hierarchical", "staged"],
                        help="train only these designs")
    parser.add_argument("--dev_only", action="store_true",
                        help="choosing settings: score nothing but the dev split (validation is never loaded "
                             "into a score) and print each run's dev exact match at its kept step")
    parser.add_argument("--jobs", type=int, default=3, help="chains of runs trained side by side (processes)")
    args = parser.parse_args()
    if args.only and not args.dev_only:
        parser.error("--only chooses settings: give it with --dev_only (the validation report needs every design)")
    logging.basicConfig(level=logging.WARNING)

    import torch
    import transformers

    import crop_hf
    from crop_hf.demo_models import build_tiny_bert, train_masked_lm
    from crop_hf.metrics.parsing import format_error_table, format_parse_table, parse_scores
    from crop_hf.parsing.predict import predict_parses, to_parse

    transformers.logging.set_verbosity_error()
    torch.set_num_threads(1)
    work = Path(tempfile.mkdtemp(prefix="bench-parser-"))
    atexit.register(shutil.rmtree, work, ignore_errors=True)  # models, caches and runs: ~50 MB
    started = time.perf_counter()
    ds = crop_hf.load_dataset("hinglish_top", data_dir=args.data_dir, cache_dir=str(work / "cache"))
    train, validation = ds["train"], ds["validation"]
    lines = [" ".join(t) for t in train["tokens"]] + [" ".join(t) for t in train["en_tokens"]]
    encoder = build_tiny_bert(work / "encoder", corpus=lines, vocab_size=args.vocab, hidden_size=args.hidden,
                              layers=args.layers, max_piece_length=args.max_piece or None)
    # ~30 passes over 2.7k utterances: the encoder needs dropout (BERT's 0.1), which the test builder leaves out.
    config = transformers.AutoConfig.from_pretrained(encoder)
    config.hidden_dropout_prob = config.attention_probs_dropout_prob = args.dropout
    config.save_pretrained(encoder)
    dev_size = args.dev_size if args.dev_only or args.select_on_dev else None
    pretrained, pretrain_seconds = encoder, 0.0
    if args.pretrain_steps:
        from crop_hf.parsing.data import dev_split

        kept = dev_split(train, dev_size, args.seed)[0] if dev_size else range(len(train))  # never the dev rows
        # the same lines the vocabulary was built from (code-switched side, then English), less the dev rows
        text = [lines[i] for i in kept] + [lines[len(train) + i] for i in kept]
        if args.pretrain_pairs:
            text = [f"{lines[i]} [SEP] {lines[len(train) + i]}" for i in kept]
        pretrained = Path(shutil.copytree(encoder, work / "encoder-mlm"))
        started_pretraining = time.process_time()
        loss = train_masked_lm(pretrained, text, args.pretrain_steps, whole_words=args.pretrain_whole_words,
                               batch_size=32 if args.pretrain_pairs else 64, seed=args.seed)
        pretrain_seconds = time.process_time() - started_pretraining
        print(f"encoder pretrained: {args.pretrain_steps} masked-LM steps on {len(text)} train lines, final loss "
              f"{loss:.2f}, {pretrain_seconds:.0f} CPU-s (counted in each run that starts from it)", flush=True)
    held_out = (f"{dev_size:.0%} of it held out as dev, seed {args.seed}" if dev_size else
                f"all of it trained on, the last step kept; seed {args.seed}")
    print(f"Hinglish-TOP: {len(train)} train ({held_out}), "
          f"{len(validation)} validation utterances ({sum(validation['nested'])} with nested gold trees); "
          f"encoder: {args.layers} layers, hidden {args.hidden}, dropout {args.dropout}, WordPiece {args.vocab}; "
          f"torch threads {torch.get_num_threads()}; code-switched training rows + {args.slot_substitution} "
          f"slot-substituted copies, nested rows + {args.nested_copies} copies, input dropout {args.input_dropout}, "
          f"moving average of the weights {args.ema_decay or 'off'}, learning rate {args.lr}, batches grouped by "
          f"length {args.group_by_length}")

    gold = list(validation["parse"])
    domains = list(validation["domain"])
    majority = Counter(train["intent"]).most_common(1)[0][0]
    baseline = parse_scores([to_parse(t, majority, ["O"] * len(t)) for t in validation["tokens"]], gold, domains,
                            seen=train["parse"])
    results = [("majority intent + all-O slots", baseline, None)]

    common = {"encoder": str(pretrained), "cache": str(work / "cache"), "data_dir": args.data_dir, "lr": args.lr,
              "minutes": args.minutes, "eval_every": args.eval_every, "dev_size": dev_size, "seed": args.seed,
              "dev_only": args.dev_only, "model_options": {"classifier_dropout": args.classifier_dropout,
                                                    "intent_pooling": args.intent_pooling,
                                                    "slot_loss_weight": args.slot_loss_weight},
              "training_options": {"per_device_train_batch_size": args.batch_size,
                                   "input_dropout": args.input_dropout, "ema_decay": args.ema_decay or None,
                                   "group_by_length": args.group_by_length}}
    code_switched = ["hinglish_top"] + (["hinglish_top#en"] if args.en_weight else [])
    weights = [1.0] + ([args.en_weight] if args.en_weight else [])

    def spec(name: str, steps: int, sources: list[str], depth: int, after: str | None = None) -> dict:
        out = str(work / name.replace(" ", "_").replace("(", "").replace(")", ""))
        mixed = sources == code_switched  # substitution and nested copies are for the code-switched rows
        options = {**common["model_options"], **({"top_tagger": args.top_tagger} if depth > 1 else {})}
        return {**common, "name": name, "steps": steps, "sources": sources, "depth": depth, "out": out,
                "model_options": options,
                "init_from": after, "weights": weights if mixed else None,
                "data_options": {"slot_substitution": args.slot_substitution if mixed else 0,
                                 "nested_copies": args.nested_copies if mixed else 0}}

    # Independent chains of runs, each in its own single-threaded process (on a shared machine they get
    # their share of the cores side by side); each run's CPU seconds are its own process's.
    designs = set(args.only or ["flat", "hierarchical"] + ([] if args.quick else ["staged"]))
    chains = []
    if "flat" in designs:
        chains.append([spec("flat CRF (cs only)", args.steps, code_switched, depth=1)])
    if "hierarchical" in designs:
        chains.append([spec("hierarchical (cs only)", args.steps, code_switched, depth=4)])
    if "staged" in designs:
        # The English parses are the staged recipe's own first stage, from random weights: with the
        # masked-LM steps too it would not fit 10 CPU-minutes.
        stage1 = {**spec("stage 1 (English)", args.en_steps, ["hinglish_top#en"], depth=4), "encoder": str(encoder)}
        chains.append([stage1, spec("stage 2 (code-switched)", args.steps, code_switched, depth=4,
                                    after=stage1["out"])])
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        finished = list(pool.map(run_chain, chains))
    for chain in finished:  # a run that starts from the pretrained encoder pays for its pretraining
        if chain[0]["encoder"] == str(pretrained):
            chain[0]["cpu_seconds"] += pretrain_seconds
    runs = {done["name"]: done for chain in finished for done in chain}
    for chain in finished:
        for done in chain:
            kept = done["dev"]
            dev = "" if kept is None else (
                f"; dev exact match by step {done['curve']}; kept step {done['selected']}: dev exact "
                f"{100 * kept['exact_match']:.1f}, flat {100 * kept['flat']['exact_match']:.1f}, nested "
                f"{100 * kept['nested']['exact_match']:.1f} ({kept['nested']['count']} rows); the nested rows' "
                "wrong trees first differ at intent/top level/inside: "
                + "/".join(str(n) for n in kept["nested"]["errors"].values()))
            misses = "" if done["misses"] is None else (
                "; wrong dev trees whose gold tree the model scores above its prediction (the decoder's misses): "
                + ", ".join(f"{key} {missed} of {wrong}" for key, (wrong, missed) in done["misses"].items()))
            print(f"  {done['name']}: {done['steps']} steps, {done['cpu_seconds']:.0f} CPU-s" + dev + misses
                  + ("" if done["scores"] is None else
                     f"; validation exact match {100 * done['scores']['exact_match']:.1f}"), flush=True)
    if args.dev_only:
        print(f"total wall time {time.perf_counter() - started:.0f} s")
        return
    flat_dir, flat_scores = runs["flat CRF (cs only)"]["out"], runs["flat CRF (cs only)"]["scores"]
    results.append(("flat CRF, code-switched only", flat_scores, runs["flat CRF (cs only)"]["cpu_seconds"]))
    tree = runs["hierarchical (cs only)"]
    tree_dir, tree_scores = tree["out"], tree["scores"]
    results.append(("hierarchical, code-switched only", tree_scores, tree["cpu_seconds"]))
    staged_scores = None
    if not args.quick:
        en, staged = runs["stage 1 (English)"], runs["stage 2 (code-switched)"]
        staged_scores = staged["scores"]
        results.append(("hierarchical, stage 1: English (CS eval)", en["scores"], en["cpu_seconds"]))
        results.append(("hierarchical, staged: English, then CS", staged_scores,
                         en["cpu_seconds"] + staged["cpu_seconds"]))

    print(f"\nvalidation ({len(validation):,} utterances, an untouched test set), percent; flat/nested = exact match "
          "on the rows whose gold tree is flat/nested; unseen = exact match on the "
          f"{baseline['unseen']['count']:,} rows whose gold parse repeats no training parse word for word; "
          "train s = CPU seconds of training and dev scoring")
    print(f"{'run':<42} {'exact':>6} {'flat':>6} {'nested':>7} {'unseen':>7} {'intent':>7} {'slotF1':>7} {'train s':>7}")
    for name, scores, seconds in results:
        print(row(name, scores, seconds))
    over = [name for name, _, seconds in results if seconds is not None and seconds > 600]
    print("every run within 10 CPU-minutes" if not over else f"OVER the 10 CPU-minute budget: {over}")
    print("\nper domain, exact match (percent)")
    designs = [("majority", baseline), ("flat CRF", flat_scores), ("hierarchical", tree_scores)]
    if staged_scores is not None:
        designs.append(("hier. staged", staged_scores))
    print(f"{'domain':<12} {'count':>5} " + " ".join(f"{name:>13}" for name, _ in designs))
    for domain in sorted(set(domains)):
        counts = baseline["per_domain"][domain]["count"]
        print(f"{domain:<12} {counts:>5} " + " ".join(
            f"{100 * scores['per_domain'][domain]['exact_match']:>13.1f}" for _, scores in designs))
    print("\nhierarchical, code-switched only, in full:\n" + format_parse_table(tree_scores))
    print("\nwhere its wrong trees first differ from gold (percent of them):\n" + format_error_table(tree_scores))

    # Throughput: the pipeline on raw text against the model called directly on pre-split words.
    from transformers import AutoTokenizer, pipeline

    from crop_hf.modeling import JointIntentSlotModel

    texts = list(validation["utterance"])
    words = [t.split() for t in texts]
    for name, folder in (("flat CRF", flat_dir), ("hierarchical", tree_dir)):
        model = JointIntentSlotModel.from_pretrained(folder)
        tokenizer = AutoTokenizer.from_pretrained(folder)
        parse = pipeline("semantic-parsing", model=str(folder))
        direct = piped = 0.0
        for _ in range(2):  # alternate, keep each one's best: the machine is shared
            start = time.perf_counter()
            predict_parses(model, tokenizer, words, batch_size=64)
            direct = max(direct, len(words) / (time.perf_counter() - start))
            start = time.perf_counter()
            outputs = parse(texts, batch_size=64)
            piped = max(piped, len(texts) / (time.perf_counter() - start))
        assert len(outputs) == len(texts)
        print(f"inference, {name}: pipeline {piped:.0f} utterances/s, predict_parses {direct:.0f} utterances/s "
              f"(ratio {piped / direct:.2f}; batch 64, 1 thread, best of 2)")
    print(f"total wall time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
