"""An issue-sized report's title is a short question inside it, and ranks as one (query.title)."""

from __future__ import annotations

import copy

from indexer import Index, build_index
from indexer.search.fusion import FusionConfig

from .conftest import MakeRepo

FILES = {
    "sphinxy/ext/typehints.py": (
        "def merge_typehints(app, domain, objtype, contentnode):\n"
        "    '''Move type hints into the description when autodoc_typehints is description.'''\n"
        "    if app.config.autodoc_typehints != 'description':\n        return\n"
        "    if objtype == 'class':\n        return  # a class has no return type\n"
        "    insert_field_list(contentnode)\n"
    ),
    "sphinxy/cmd/quickstart.py": (
        "CONF_TEMPLATE = '''\n"
        "import os\nimport sys\nsys.path.insert(0, os.path.abspath('.'))\n"
        "project = {project!r}\ncopyright = {copyright!r}\nauthor = {author!r}\n"
        "release = {release!r}\nextensions = {extensions!r}\n"
        "templates_path = ['_templates']\nexclude_patterns = ['_build', 'Thumbs.db', '.DS_Store']\n"
        "html_theme = 'alabaster'\nhtml_static_path = ['_static']\n'''\n\n\n"
        "def generate(project, author, release, extensions):\n"
        "    '''Write conf.py for a new project: path, theme, extensions, templates.'''\n"
        "    return CONF_TEMPLATE.format(project=project, copyright=author, author=author,\n"
        "                                release=release, extensions=extensions)\n"
    ),
    "sphinxy/application.py": (
        "class Sphinx:\n    def __init__(self, srcdir, confdir, outdir, doctreedir, buildername):\n"
        "        self.srcdir = srcdir\n        self.confdir = confdir\n"
        "        self.extensions = {}\n\n    def setup_extension(self, extname):\n"
        "        '''Import an extension and call its setup().'''\n"
        "        self.extensions[extname] = __import__(extname)\n"
    ),
}
REPORT = """`autodoc_typehints = "description"` causes autoclass to put a return type
### Describe the bug

Using the option makes the class documentation include a return type. Our conf.py:

```py
import os
import sys
sys.path.insert(0, os.path.abspath('..'))

project = 'sphinx-issue'
copyright = '2022, Jane Doe'
author = 'Jane Doe'
release = '0.1'
extensions = [
    'sphinx.ext.autodoc',
]
templates_path = ['_templates']
exclude_patterns = ['_build', 'Thumbs.db', '.DS_Store']
html_theme = 'alabaster'
html_static_path = ['_static']
autodoc_typehints = "description"
```

Run sphinx-quickstart, then build with make html. Expected: no return type for the class.
"""


def test_the_title_finds_the_file_a_pasted_config_hides(make_repo: MakeRepo) -> None:
    root = make_repo(dict(FILES))
    build_index(root, progress=False)
    index = Index.open(root)
    # The pasted conf.py shares most of its words with the quickstart template; the title names
    # the option the fix is about.
    assert index.search(REPORT, k=3, cut=False)[0].path == "sphinxy/ext/typehints.py"
    values = copy.deepcopy(index.fusion.values)
    values["query"]["title"] = 0.0
    without = Index(index.snapshot, FusionConfig(values))
    assert without.search(REPORT, k=3, cut=False)[0].path != "sphinxy/ext/typehints.py"
