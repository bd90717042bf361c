"""The judge: what the judge model is told and how its answer is read, the `llm_judge`
grader, the pairwise judge of a challenger, and the judge checked against human labels
(calibration, the review page) (docs/models-and-judges.md, docs/calibrating-the-judge.md)."""
