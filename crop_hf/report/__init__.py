"""See a synthetic corpus before training on it: plots, an HTML page, and the dataset card's plots.

:func:`write_report` reads a ``crop-hf synthesize`` output folder and writes, under
``OUTPUT_DIR/report/``:

* ``funnel.png`` — per language, the filter funnel: sentences read, dropped by each reason, kept;
* ``labels.png`` — entity-type distribution of the source side (what the source NER model found
  in every translated sentence) against the kept target side;
* ``lengths.png`` — tokens per sentence, kept vs dropped;
* ``statuses.png`` — what became of each translated entity in projection;
* ``gold.png`` — with gold target labels, projection P/R/F1 per language and type;
* ``report.json`` (the numbers behind the plots) and ``index.html`` (one self-contained page);

and links the plots from the dataset card (``OUTPUT_DIR/README.md``), so that
:func:`crop_hf.synthesis.runner.push_to_hub` publishes them with the data. The command is
``crop-hf report OUTPUT_DIR`` (or ``crop-hf synthesize ... --report``). Plotting needs matplotlib
(``pip install 'crop-hf[report]'``); importing this package does not load it.

The numbers are computed apart from the drawing (:func:`crop_hf.report.data.read_report_data`),
so they can be checked and reused: see :mod:`crop_hf.report.data` for what each one means.
"""

from crop_hf.report.data import LanguageReport, ReportData, read_gold, read_report_data
from crop_hf.report.page import ReportFiles, write_report

__all__ = ["LanguageReport", "ReportData", "ReportFiles", "read_gold", "read_report_data", "write_report"]
