"""The ground floor: what every other part of the helpers stands on.

Argument checks (validate), the array libraries and how to move arrays between them (backend), where a notebook
runs and the notice when its accelerator is missing (place, notice), time limits on a learner's code (limits),
files read and written safely (files, notebook_file), progress lines, the project's own facts and paths
(project), the series' look (style) and CuPy's kernel parameters as CuPy reads them (cupy_params).

It imports nothing else from helpers.
"""
