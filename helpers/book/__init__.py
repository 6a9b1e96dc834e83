"""The book, the classroom and the upkeep: the offline HTML book (site), hand-outs and the class's machines
(classroom), the teacher guide (guide, chapter_time), recorded runs and the rules they are held to (records,
run_checks, solutions), the evidence pages (evidence; gpu_report with report_case and report_chapters), keeping
notebooks in step (upkeep) and the helpers' own plan (architecture).

It may import helpers.core, helpers.measuring, helpers.model, helpers.learning, helpers.executor, helpers.gpu,
helpers.tpu, helpers.figures and helpers.chapters: every other sub-package. Nothing imports it but the command line
(helpers.__main__).
"""
