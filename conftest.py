"""Root conftest: the test suite drives real pytest sessions through pytester.

numpy is imported here, once: pytester's in-process sessions restore `sys.modules` after each
run, and a session that imported numpy for the first time would leave the next one to import
its C extension again, which numpy refuses ("cannot load module more than once"). The plugin
itself imports numpy only when a session gates (docs/options.md, "When verdryx turns on").
"""

import numpy  # noqa: F401
