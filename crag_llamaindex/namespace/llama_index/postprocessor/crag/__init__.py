"""CRAG under LlamaIndex's integration naming: `from llama_index.postprocessor.crag import CRAGPostprocessor`.

The same classes as `crag_llamaindex`, which `pip install crag-llamaindex` installs with this path.
"""

from crag_llamaindex import *  # noqa: F403
from crag_llamaindex import __all__ as __all__
