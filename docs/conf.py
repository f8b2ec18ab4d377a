# Sphinx configuration of the lanemap user guide.  The pages are MyST
# Markdown (docs/*.md); the API pages come from Doxygen XML through breathe.
# docs/CMakeLists.txt runs this with -W, so any warning fails the build.
import os

project = "lanemap"
author = "the lanemap developers"
copyright = "the lanemap developers"
release = os.environ.get("LANEMAP_VERSION", "0.1.0")
version = release

extensions = ["myst_parser", "breathe", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "build*", "CMakeLists.txt", "Doxyfile.in"]

# MyST: fenced directives plus the few extensions the pages use; anchors on
# headings up to level 3 so pages can link to sections ([text](cli.md#check)).
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
myst_heading_anchors = 3

# breathe: Doxygen's XML, found through the environment set by CMake; a
# source-tree build without CMake falls back to the release preset's output.
_here = os.path.dirname(os.path.abspath(__file__))
breathe_projects = {
    "lanemap": os.environ.get(
        "LANEMAP_DOXYGEN_XML",
        os.path.join(_here, "..", "build", "release", "docs", "doxygen", "xml"),
    )
}
breathe_default_project = "lanemap"
breathe_domain_by_extension = {"h": "c", "c": "c"}

# autodoc: the Python package's pages (python.md) come from its docstrings.
# Its one compiled module, the CFFI binding, is mocked, so the guide builds
# without building the package first.
import sys

sys.path.insert(0, os.path.join(_here, "..", "python"))
autodoc_mock_imports = ["lanemap._native"]
autodoc_member_order = "bysource"
autodoc_typehints = "description"

html_theme = "alabaster"
html_title = f"lanemap {release}"
html_static_path = []

# Command lines are full of "--flags": keep dashes and quotes as typed.
smartquotes = False


# Two public headers may both forward-declare one opaque type
# (`typedef struct lm_profile lm_profile;` is legal C11 and lets each header
# stand alone).  Doxygen reports it once per header and Sphinx's C domain
# would call the second a duplicate; the type is documented once, so that
# one warning, and only for such typedefs, is dropped.  Every other warning
# still fails the build.
import logging
import re

_OPAQUE_TYPEDEF = re.compile(
    r"Duplicate C declaration.*\n"
    r"Declaration is '\.\. c:type:: (struct|union|enum) (\w+) \2'\.$"
)


class _RepeatedOpaqueTypedef(logging.Filter):
    def filter(self, record):
        return not _OPAQUE_TYPEDEF.search(record.getMessage())


def setup(app):
    logging.getLogger("sphinx.sphinx.domains.c").addFilter(
        _RepeatedOpaqueTypedef()
    )
