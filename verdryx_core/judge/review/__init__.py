"""The review page: a run's judged cases served on 127.0.0.1 for people to label, each label
appended to a labels file (docs/calibrating-the-judge.md, "Labelling in the browser")."""

from verdryx_core.judge.review._page import ReviewItem, review_items, review_page
from verdryx_core.judge.review._server import ReviewServer

__all__ = ["ReviewItem", "ReviewServer", "review_items", "review_page"]
