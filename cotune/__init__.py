"""cotune: choose workers, GPU type, market and batch size of a training job together.

Pipeline: profile (measurements) → monotone models (epoch time, accuracy) → solver
(cheapest candidate meeting the target by the deadline) → recommendation.

``import cotune`` is cheap: numpy only; scipy, scikit-learn and pandas load when a
model is fitted. It never imports torch.
"""
