"""How the series teaches: exercise checkers, claims a chapter checks as it runs, prediction prompts, the
glossary and the small pieces chapters share (lessons).

It may import helpers.core and helpers.measuring; never the model, a device's code or a chapter.
"""
