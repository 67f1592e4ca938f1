"""Demo tasks for ``lightning-tau demo``: small, offline Lightning tasks that show the timescale rule on real data.

``digits`` is scikit-learn's bundled digits (the dataset-size sweep); ``width`` the muP width sweep on it.
"""
