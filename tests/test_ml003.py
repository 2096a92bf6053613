"""ML003 beyond the collected examples: its unsafe fixes, messages and silences."""

from __future__ import annotations

import textwrap

import pytest

from mllint.engine import lint_source
from mllint.findings import Applicability
from mllint.fixing import fix_source
from mllint.registry import all_rules

RULE = all_rules()["ML003"]


def lint(source: str):
    return [f for f in lint_source(textwrap.dedent(source), "t.py", [RULE]) if f.code == "ML003"]


def unsafe_fix(source: str):
    return fix_source(textwrap.dedent(source), "t.py", [RULE], unsafe=True)


# --- the unsafe fixes of the INVALID examples ------------------------------------------------------

WITH_UNSAFE_FIX = [e for e in RULE.invalid if e.unsafe_fixed is not None]


def test_some_examples_show_their_unsafe_fix():
    assert len(WITH_UNSAFE_FIX) >= 5


@pytest.mark.parametrize("example", WITH_UNSAFE_FIX, ids=lambda e: e.code.splitlines()[-1][:40])
def test_unsafe_fix_gives_the_expected_code_which_lints_clean(example):
    outcome = fix_source(example.code, "example.py", [RULE], unsafe=True)
    assert outcome.rejected == []
    assert outcome.source == example.unsafe_fixed
    assert [f for f in outcome.remaining if f.code == "ML003"] == []
    again = fix_source(outcome.source, "example.py", [RULE], unsafe=True)
    assert again.source == outcome.source and again.applied == []


@pytest.mark.parametrize("example", RULE.invalid, ids=lambda e: e.code.splitlines()[-1][:40])
def test_every_offered_fix_is_unsafe_and_removes_the_finding(example):
    findings = [f for f in lint_source(example.code, "example.py", [RULE]) if f.code == "ML003"]
    assert findings
    assert all(f.fix is None or f.fix.applicability is Applicability.UNSAFE for f in findings)
    if example.unsafe_fixed is None:
        assert all(f.fix is None for f in findings), "an INVALID example with a fix should show it (unsafe_fixed=...)"
    # --fix alone never touches leakage
    assert fix_source(example.code, "example.py", [RULE]).source == example.code


def test_the_fixed_code_runs_like_the_intended_code():
    """The reordered code is real Python that scikit-learn accepts (run, not just parsed)."""
    pytest.importorskip("sklearn")
    source = textwrap.dedent(
        """
        import numpy as np
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import StandardScaler
        rng = np.random.RandomState(0)
        X = rng.randn(60, 3)
        y = (X[:, 0] > 0).astype(int)
        X_scaled = StandardScaler().fit_transform(X)
        X_train, X_test, y_train, y_test = train_test_split(X_scaled, y, test_size=0.25, random_state=0)
        model = LogisticRegression().fit(X_train, y_train)
        score = model.score(X_test, y_test)
        """
    )
    fixed = fix_source(source, "t.py", [RULE], unsafe=True).source
    assert "scaler = StandardScaler()" in fixed and "scaler.transform(X_test)" in fixed
    namespace: dict = {}
    exec(compile(fixed, "fixed.py", "exec"), namespace)
    assert 0.5 <= namespace["score"] <= 1.0
    assert abs(namespace["X_train"].mean()) < 1e-9  # fitted on the training split


# --- when no fix is offered --------------------------------------------------------------------------


def test_no_fix_when_the_transformed_data_is_used_again_after_the_split():
    findings = lint(
        """
        from sklearn.preprocessing import StandardScaler
        from sklearn.model_selection import train_test_split
        X_s = StandardScaler().fit_transform(X)
        X_train, X_test, y_train, y_test = train_test_split(X_s, y)
        model.fit(X_train, y_train)
        plot(X_s)
        """
    )
    assert len(findings) == 1 and findings[0].fix is None


def test_no_fix_when_the_input_changes_between_fit_and_split():
    findings = lint(
        """
        from sklearn.preprocessing import StandardScaler
        from sklearn.model_selection import train_test_split
        X_s = StandardScaler().fit_transform(X)
        X = X.drop(columns=["id"])
        X_train, X_test, y_train, y_test = train_test_split(X_s, y)
        model.fit(X_train, y_train)
        """
    )
    assert len(findings) == 1 and findings[0].fix is None


def test_no_fix_when_the_fit_and_the_split_sit_in_different_blocks():
    findings = lint(
        """
        from sklearn.preprocessing import StandardScaler
        from sklearn.model_selection import train_test_split
        if normalise:
            X = StandardScaler().fit_transform(X)
        X_train, X_test, y_train, y_test = train_test_split(X, y)
        model.fit(X_train, y_train)
        """
    )
    assert len(findings) == 1 and findings[0].fix is None


def test_fix_inside_a_function_and_with_a_supervised_selector():
    outcome = unsafe_fix(
        """
        from sklearn.feature_selection import SelectKBest, chi2
        from sklearn.model_selection import train_test_split

        def run(X, y):
            selector = SelectKBest(chi2, k=10)
            X = selector.fit_transform(X, y)
            X_tr, X_te, y_tr, y_te = train_test_split(X, y, random_state=0)
            return model.fit(X_tr, y_tr).score(X_te, y_te)
        """
    )
    assert outcome.source == textwrap.dedent(
        """
        from sklearn.feature_selection import SelectKBest, chi2
        from sklearn.model_selection import train_test_split

        def run(X, y):
            selector = SelectKBest(chi2, k=10)
            X_tr, X_te, y_tr, y_te = train_test_split(X, y, random_state=0)
            X_tr = selector.fit_transform(X_tr, y_tr)
            X_te = selector.transform(X_te)
            return model.fit(X_tr, y_tr).score(X_te, y_te)
        """
    )
    assert [f for f in outcome.remaining if f.code == "ML003"] == []


# --- messages --------------------------------------------------------------------------------------


def test_the_message_names_the_split_and_the_rewrite():
    (finding,) = lint(
        """
        from sklearn.preprocessing import MinMaxScaler
        from sklearn.model_selection import train_test_split
        scaler = MinMaxScaler()
        X = scaler.fit_transform(X)
        X_tr, X_te, y_tr, y_te = train_test_split(X, y)
        model.fit(X_tr, y_tr)
        """
    )
    assert finding.line == 5
    assert "before the split (line 6)" in finding.message  # the one-line message: what leaks, where split
    assert "line 6" in finding.detail and "`train_test_split`" in finding.detail  # the detail: how, and the fix
    assert "`scaler.fit_transform(X_tr)`" in finding.detail and "`scaler.transform(X_te)`" in finding.detail


# --- silences that matter ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        # no split anywhere: an unsupervised notebook
        """
        from sklearn.preprocessing import StandardScaler
        from sklearn.cluster import KMeans
        X = StandardScaler().fit_transform(df[cols])
        df["cluster"] = KMeans(4).fit_predict(X)
        """,
        # fit on train, transform the whole data, then split that
        """
        from sklearn.preprocessing import StandardScaler
        from sklearn.model_selection import train_test_split
        X_train, X_test, y_train, y_test = train_test_split(X, y)
        scaler = StandardScaler().fit(X_train)
        X_all = scaler.transform(X)
        model.fit(scaler.transform(X_train), y_train)
        """,
        # a keras model monitoring the test split during training: not a fit on it
        """
        from sklearn.model_selection import train_test_split
        X_train, X_test, y_train, y_test = train_test_split(X, y)
        model.fit(X_train, y_train, epochs=10, validation_data=(X_test, y_test))
        model.evaluate(X_test, y_test)
        """,
        # blending: a second-level model fitted on a held-out validation part
        """
        from sklearn.model_selection import train_test_split
        X_train, X_blend, y_train, y_blend = train_test_split(X, y, test_size=0.3)
        base.fit(X_train, y_train)
        meta.fit(base.predict_proba(X_blend), y_blend)
        """,
        # a precomputed kernel: the test rows against the training rows (no fit on test rows)
        """
        from sklearn.model_selection import GridSearchCV
        from sklearn.svm import SVC
        K_train = np.dot(X_[:180], X_[:180].T)
        y_train = y_[:180]
        search = GridSearchCV(SVC(kernel="precomputed"), {"C": [0.1, 1.0]})
        search.fit(K_train, y_train)
        K_test = np.dot(X_[180:], X_[:180].T)
        search.score(K_test, y_[180:])
        """,
        # fitted on everything, then its coefficients are replaced before it predicts the fold
        """
        from sklearn.linear_model import LogisticRegression
        for i, (train, test) in enumerate(cv.split(X, y)):
            clf = LogisticRegression().fit(X, y)
            clf.coef_ = paths[i]
            print(clf.predict_proba(X[test]))
        """,
        # a scaler on the target of a regression, inside a function that receives the data
        """
        from sklearn.preprocessing import StandardScaler
        def fit_model(X_train, y_train):
            y_scaler = StandardScaler()
            y_s = y_scaler.fit_transform(y_train.reshape(-1, 1))
            return model.fit(X_train, y_s)
        """,
    ],
)
def test_silent(source):
    assert lint(source) == []


# --- helpers and methods --------------------------------------------------------------------------


def test_a_helper_called_with_the_test_split_fits_on_it():
    (finding,) = lint(
        """
        from sklearn.preprocessing import StandardScaler
        from sklearn.model_selection import train_test_split

        def scale(frame):
            return StandardScaler().fit_transform(frame)

        X_train, X_test, y_train, y_test = train_test_split(X, y)
        X_train = scale(X_train)
        X_test = scale(X_test)
        model.fit(X_train, y_train)
        print(model.score(X_test, y_test))
        """
    )
    assert finding.line == 6
    assert "test split when line 10 calls it" in finding.message
    assert "test split when `scale(X_test)` (line 10) calls it" in finding.detail


def test_leak_through_methods_of_a_class_reported_in_the_helper_with_the_caller_named():
    findings = lint(
        """
        import pandas as pd
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import StandardScaler

        class Search:
            def prep_numeric(self, frame):
                frame[frame.columns] = StandardScaler().fit_transform(frame)
                return frame

            def prep_input(self, X):
                return self.prep_numeric(X.select_dtypes("number").copy())

            def fit(self, X, y):
                features = pd.concat([self.prep_input(X), y], axis=1).dropna().drop(columns=["y"])
                X_train, X_test, y_train, y_test = train_test_split(features, y)
                self.model.fit(X_train, y_train)
                return self.model.score(X_test, y_test)
        """
    )
    assert [f.line for f in findings] == [8]
    assert "as passed by `self.prep_input(X)` on line 15" in findings[0].detail


def test_helpers_fitting_on_the_training_split_are_fine():
    assert lint(
        """
        from sklearn.preprocessing import OrdinalEncoder
        from sklearn.model_selection import train_test_split

        def prepare_inputs(X_train, X_test):
            oe = OrdinalEncoder()
            oe.fit(X_train)
            return oe.transform(X_train), oe.transform(X_test)

        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.33, random_state=1)
        X_train_enc, X_test_enc = prepare_inputs(X_train, X_test)
        model.fit(X_train_enc, y_train)
        print(model.score(X_test_enc, y_test))
        """
    ) == []


def test_keras_tokenizer_vocabulary_learned_before_the_split():
    (finding,) = lint(
        """
        from tensorflow.keras.preprocessing.text import Tokenizer
        from sklearn.model_selection import train_test_split
        tokenizer = Tokenizer(num_words=10000)
        tokenizer.fit_on_texts(df["text"])
        X = pad_sequences(tokenizer.texts_to_sequences(df["text"]), maxlen=100)
        X_train, X_test, y_train, y_test = train_test_split(X, df["label"], test_size=0.2)
        model.fit(X_train, y_train, epochs=5)
        """
    )
    assert finding.line == 5 and "`tokenizer.fit_on_texts(X_train)`" in finding.detail
    assert finding.message.startswith("tokenizer fitted on")


def test_refit_on_test_data_loaded_from_its_own_file():
    (finding,) = lint(
        """
        import pandas as pd
        from sklearn.preprocessing import StandardScaler
        train = pd.read_csv("train.csv")
        test = pd.read_csv("test.csv")
        sc = StandardScaler()
        X_train = sc.fit_transform(train[FEATURES])
        X_test = sc.fit_transform(test[FEATURES])
        model.fit(X_train, train["y"])
        print(model.score(X_test, test["y"]))
        """
    )
    assert finding.line == 8 and finding.fix is not None


def test_a_helper_that_cross_validates_what_it_is_handed_is_a_split():
    findings = lint(
        """
        from sklearn.decomposition import PCA
        from sklearn.model_selection import KFold

        def evaluate(features, labels):
            scores = []
            for tr, te in KFold(n_splits=5).split(features):
                clf.fit(features[tr], labels[tr])
                scores.append(clf.score(features[te], labels[te]))
            return scores

        X_reduced = PCA(n_components=10).fit_transform(X)
        print(evaluate(X_reduced, y))
        """
    )
    assert [f.line for f in findings] == [12]
    assert "(in `evaluate`)" in findings[0].detail


# --- devsample2 shapes: outputs only plotted, lagged pairs, constant categories, scoring wrappers ------


def test_a_plotting_helper_that_selects_rows_by_class_is_no_split():
    """The helper scales what it is handed and picks each class's rows with ``X[y == c]`` to draw
    them: one mask part, never its complement, so the helper does not split its input."""
    source = """
        import matplotlib.pyplot as plt
        from sklearn.decomposition import PCA
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import MinMaxScaler

        def show_groups(points, groups):
            unit = MinMaxScaler().fit_transform(points)
            for g in sorted(set(groups)):
                plt.scatter(unit[groups == g, 0], unit[groups == g, 1])

        X_train, X_test, y_train, y_test = train_test_split(table, target)
        model.fit(X_train, y_train)
        print(model.score(X_test, y_test))
        sample = table[picked]
        show_groups(PCA(n_components=2).fit_transform(sample), target[picked])
        """
    assert lint(source) == []


def test_a_helper_that_really_splits_by_a_mask_still_takes_what_it_is_handed_apart():
    findings = lint(
        """
        from sklearn.preprocessing import StandardScaler

        def by_year(frame):
            early = frame[frame.year < 2020]
            late = frame[frame.year >= 2020]
            model.fit(early[COLS], early.y)
            return model.score(late[COLS], late.y)

        table[COLS] = StandardScaler().fit_transform(table[COLS])
        print(by_year(table))
        """
    )
    assert [f.line for f in findings] == [10]


def test_embeddings_without_transform_carry_nothing_to_other_rows_but_lle_does():
    findings = lint(
        """
        import numpy as np
        from sklearn.decomposition import PCA
        from sklearn.manifold import MDS, TSNE, LocallyLinearEmbedding, SpectralEmbedding
        from sklearn.model_selection import train_test_split
        from sklearn.pipeline import Pipeline, make_pipeline
        a = TSNE(n_components=2).fit_transform(table)
        b = make_pipeline(PCA(n_components=20), MDS(n_components=2)).fit_transform(table)
        c = Pipeline([("pca", PCA(n_components=20)), ("se", SpectralEmbedding())]).fit_transform(table)
        d = LocallyLinearEmbedding(n_components=2).fit_transform(table)
        e = make_pipeline(TSNE(n_components=2), PCA(n_components=2)).fit_transform(table)
        X_train, X_test, y_train, y_test = train_test_split(np.hstack([a, b, c, d, e]), target)
        model.fit(X_train, y_train)
        print(model.score(X_test, y_test))
        """
    )
    assert [f.line for f in findings] == [10, 11]


def test_lagged_pairs_are_no_split_and_a_date_split_by_loc_is_one():
    clean = """
        import pandas as pd
        from sklearn.preprocessing import StandardScaler
        cutoff = pd.Timestamp("2021-06-30")
        early = prices.loc[:cutoff]
        late = prices.loc[cutoff:]
        scaler = StandardScaler()
        early_s = scaler.fit_transform(early)
        late_s = scaler.transform(late)
        regressor.fit(early_s[:-1], early_s[1:])
        print(regressor.score(late_s[:-1], late_s[1:]))
        """
    assert lint(clean) == []
    leaky = clean.replace("early = prices.loc[:cutoff]", "prices = StandardScaler().fit_transform(prices)\n        early = prices.loc[:cutoff]")
    assert [f.line for f in lint(leaky)] == [5]


@pytest.mark.parametrize(
    "head, tail, split",
    [
        ("n", "n", True),  # one boundary
        ("-1", "-1", True),  # the last row held out
        ("n_train", "n_train + gap", True),  # a gap between the parts
        ("100", "150", True),
        ("-1", "1", False),  # a lag of one
        ("-k", "k", False),  # a lag of k
        ("100", "50", False),  # overlapping windows
        ("-10", "-20", False),
    ],
)
def test_complementary_slices_must_not_overlap(head, tail, split):
    findings = lint(
        f"""
        from sklearn.preprocessing import MinMaxScaler
        series = MinMaxScaler().fit_transform(raw)
        inputs = series[:{head}]
        outputs = series[{tail}:]
        regressor.fit(inputs, outputs)
        """
    )
    assert [f.line for f in findings] == ([3] if split else [])


def test_a_date_split_by_iloc_on_a_shared_boundary_after_a_scaler_on_everything():
    findings = lint(
        """
        from sklearn.preprocessing import MinMaxScaler
        series = MinMaxScaler().fit_transform(readings)
        n_fit = int(len(series) * 0.8)
        fit_part = series.iloc[:n_fit]
        held_part = series.iloc[n_fit:]
        regressor.fit(fit_part[:-3], fit_part[3:])
        print(regressor.score(held_part[:-3], held_part[3:]))
        """
    )
    assert [f.line for f in findings] == [3]


def test_encoders_told_their_categories_learn_nothing_from_the_rows():
    findings = lint(
        """
        import numpy as np
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder
        levels = ["low", "mid", "high"]
        a = OrdinalEncoder(categories=[levels]).fit_transform(frame[["grade"]])
        b = OneHotEncoder(categories=[["x", "y"]], handle_unknown="ignore").fit_transform(frame[["kind"]])
        c = OneHotEncoder(categories="auto").fit_transform(frame[["shape"]])
        d = OneHotEncoder(categories=[["x", "y"]], min_frequency=5).fit_transform(frame[["kind2"]])
        e = OrdinalEncoder(categories=[frame["grade2"].unique()]).fit_transform(frame[["grade2"]])
        X_train, X_test, y_train, y_test = train_test_split(np.hstack([a, b, c, d, e]), target)
        model.fit(X_train, y_train)
        print(model.score(X_test, y_test))
        """
    )
    assert [f.line for f in findings] == [8, 9, 10]


def test_wrappers_that_only_score_an_already_fitted_model_are_evaluation():
    findings = lint(
        """
        import eli5
        from eli5.sklearn import PermutationImportance
        from sklearn.ensemble import RandomForestClassifier
        from sklearn.inspection import permutation_importance
        from sklearn.model_selection import train_test_split
        X_train, X_test, y_train, y_test = train_test_split(X, y)
        forest = RandomForestClassifier().fit(X_train, y_train)
        PermutationImportance(forest, n_iter=5).fit(X_test, y_test)
        scorer = eli5.sklearn.PermutationImportance(forest, cv="prefit")
        scorer.fit(X_test, y_test)
        permutation_importance(forest, X_test, y_test)
        PermutationImportance(forest, cv=5).fit(X_test, y_test)
        fresh = RandomForestClassifier()
        PermutationImportance(fresh).fit(X_test, y_test)
        """
    )
    assert [f.line for f in findings] == [13, 15]


def test_scoring_on_the_test_split_after_a_refit_on_everything_is_still_a_refit_leak():
    for scoring in ("PermutationImportance(forest).fit(X_test, y_test)", "permutation_importance(forest, X_test, y_test)"):
        findings = lint(
            f"""
            from eli5.sklearn import PermutationImportance
            from sklearn.ensemble import RandomForestClassifier
            from sklearn.inspection import permutation_importance
            from sklearn.model_selection import train_test_split
            X_train, X_test, y_train, y_test = train_test_split(X, y)
            forest = RandomForestClassifier()
            forest.fit(X, y)
            {scoring}
            """
        )
        assert [f.line for f in findings] == [8], scoring


def test_a_union_learns_what_its_steps_learn():
    # a union or pipeline fitted on the test split leaks only when some step stores what it
    # learns: a class of the file whose fit sets an attribute, or any class whose fit we cannot see
    code = '''
        import numpy as np
        from sklearn.pipeline import FeatureUnion, make_pipeline
        from sklearn.preprocessing import Normalizer, StandardScaler
        from sklearn.model_selection import train_test_split
        from steps import Imported


        class Conv:
            def fit(self, x, y=None):
                return self

            def transform(self, x):
                return x * 2


        class Centre:
            def fit(self, x, y=None):
                self.mean = x.mean(0)
                return self

            def transform(self, x):
                return x - self.mean


        X, y = np.random.rand(100, 4), np.random.rand(100)
        x_train, x_test, y_train, y_test = train_test_split(X, y)
        a = FeatureUnion([("c", Conv()), ("n", Normalizer())])
        a.fit_transform(x_train), a.fit_transform(x_test)
        b = make_pipeline(Conv(), Normalizer())
        b.fit_transform(x_train), b.fit_transform(x_test)
        c = FeatureUnion([("c", Centre()), ("k", Conv())])
        c.fit_transform(x_train), c.fit_transform(x_test)
        d = make_pipeline(Conv(), StandardScaler())
        d.fit_transform(x_train), d.fit_transform(x_test)
        e = FeatureUnion([("i", Imported()), ("k", Conv())])
        e.fit_transform(x_train), e.fit_transform(x_test)
    '''
    assert [f.line for f in lint(code)] == [33, 35, 37]  # c, d, e


def test_a_column_transformer_of_stateless_steps_learns_nothing():
    code = '''
        import numpy as np
        from sklearn.compose import ColumnTransformer, make_column_transformer
        from sklearn.preprocessing import Binarizer, FunctionTransformer, StandardScaler
        from sklearn.model_selection import cross_val_score
        from sklearn.linear_model import LogisticRegression

        a = ColumnTransformer([("log", FunctionTransformer(np.log1p), ["Fare"])], remainder="passthrough").fit_transform(X)
        print(cross_val_score(LogisticRegression(), a, y, cv=10))
        b = make_column_transformer((Binarizer(), ["Age"]), remainder="drop").fit_transform(X)
        print(cross_val_score(LogisticRegression(), b, y, cv=10))
        c = ColumnTransformer([("log", FunctionTransformer(np.log1p), ["Fare"])], remainder=StandardScaler()).fit_transform(X)
        print(cross_val_score(LogisticRegression(), c, y, cv=10))
        d = make_column_transformer((StandardScaler(), ["Age"]), ("drop", ["Id"])).fit_transform(X)
        print(cross_val_score(LogisticRegression(), d, y, cv=10))
    '''
    assert [f.line for f in lint(code)] == [12, 14]
