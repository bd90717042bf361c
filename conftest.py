"""Root conftest: the test suite drives real pytest sessions through pytester."""
