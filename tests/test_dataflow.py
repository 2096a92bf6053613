"""The data-flow analysis on its own (mllint/semantics/dataflow.py): rows, splits, fits, sinks."""

from __future__ import annotations

import textwrap

import libcst as cst

from mllint.semantics import build_model
from mllint.semantics import dataflow as D


def flow_of(source: str):
    source = textwrap.dedent(source)
    model = build_model(cst.parse_module(source), source, "t.py")
    return model, D.dataflow_of(model)


def fit_at(model, flow, text: str) -> D.FitEvent:
    found = [f for f in flow.fits if text in model.code_of(f.node)]
    assert len(found) == 1, [model.code_of(f.node) for f in flow.fits]
    return found[0]


def kind_of(model, flow, text: str):
    return flow.classify(fit_at(model, flow, text).rows)[0]


# --- laziness --------------------------------------------------------------------------------


def test_computed_once_and_cached_on_the_model():
    model, flow = flow_of("scaler.fit(X)\n")
    assert D.dataflow_of(model) is flow


def test_a_file_without_fits_has_no_facts():
    model, flow = flow_of(
        """
        X_train, X_test = train_test_split(X)
        print(X_train.mean())
        """
    )
    assert flow.fits == [] and flow.splits == {}


# --- splits and parts --------------------------------------------------------------------------


def test_train_test_split_outputs_are_parts_of_the_input_rows():
    model, flow = flow_of(
        """
        from sklearn.model_selection import train_test_split
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2)
        a.fit(X_train, y_train)
        b.fit(X_test, y_test)
        c.fit(X, y)
        """
    )
    (split,) = flow.splits.values()
    assert split.kind == "train_test_split"
    assert split.names[D.TRAIN] == ["X_train", "y_train"] and split.names[D.TEST] == ["X_test", "y_test"]
    assert kind_of(model, flow, "a.fit") is None
    assert kind_of(model, flow, "b.fit") == D.TEST
    assert kind_of(model, flow, "c.fit") == "full"


def test_column_selection_values_and_arithmetic_keep_the_rows():
    model, flow = flow_of(
        """
        X = df.drop(columns=["target"]).values
        Z = (X - X.mean()) / 255.0
        s.fit(Z[:, :3])
        X_train, X_test = train_test_split(df[["a", "b"]].to_numpy())
        """
    )
    assert kind_of(model, flow, "s.fit") == "full"


def test_a_second_split_of_the_training_part_is_validation():
    model, flow = flow_of(
        """
        X_dev, X_test, y_dev, y_test = train_test_split(X, y)
        X_tr, X_val, y_tr, y_val = train_test_split(X_dev, y_dev)
        a.fit(X_dev)
        b.fit(np.concatenate([X_tr, X_val]))
        c.fit(X_val)
        d.fit(np.vstack([X_tr, X_test]))
        """
    )
    assert kind_of(model, flow, "a.fit") is None  # train + validation: the test split stayed out
    assert kind_of(model, flow, "b.fit") is None
    assert kind_of(model, flow, "c.fit") == D.VAL
    assert kind_of(model, flow, "d.fit") == "concat"


def test_fold_indices_restrict_rows_and_the_split_covers_the_whole_data():
    model, flow = flow_of(
        """
        from sklearn.model_selection import StratifiedKFold
        skf = StratifiedKFold(n_splits=5)
        before.fit(X)
        for fold, (tr, va) in enumerate(skf.split(X, y)):
            inner.fit(X[tr], y[tr])
            other.fit(X.iloc[va])
        """
    )
    assert kind_of(model, flow, "before.fit") == "full"
    assert kind_of(model, flow, "inner.fit") is None
    assert kind_of(model, flow, "other.fit") == D.TEST
    assert any(s.kind == "folds" for s in flow.splits.values())


def test_complementary_slices_split_only_when_both_parts_are_taken():
    model, flow = flow_of(
        """
        a.fit(series[:1000])
        b.fit(other[:n])
        train, test = other2[:n], other2[n:]
        c.fit(series)
        """
    )
    # series[:1000] alone is a subsample, not a split
    assert kind_of(model, flow, "c.fit(series)") == "unsplit" or kind_of(model, flow, "c.fit(series)") is None
    assert kind_of(model, flow, "a.fit") is None


def test_slices_of_derived_data_share_the_split_of_their_rows():
    model, flow = flow_of(
        """
        scaler.fit(series[:n_train])
        scaled = scaler.transform(series)
        train, test = scaled[:n_train], scaled[n_train:]
        model.fit(train)
        """
    )
    assert kind_of(model, flow, "scaler.fit") is None  # the training window of the same rows


def test_slice_names_decide_which_part_is_the_test_part():
    model, flow = flow_of(
        """
        X_test = X[:n]
        X_train = X[n:]
        m.fit(X_test)
        """
    )
    assert kind_of(model, flow, "m.fit") == D.TEST


def test_complementary_masks_and_sample_drop_are_splits():
    model, flow = flow_of(
        """
        a.fit(df)
        train = df[df["date"] < cutoff]
        test = df[df["date"] >= cutoff]
        b.fit(frame)
        tr = frame.sample(frac=0.8)
        te = frame.drop(tr.index)
        c.fit(te)
        """
    )
    assert kind_of(model, flow, "a.fit") == "full"
    assert kind_of(model, flow, "b.fit") == "full"
    assert kind_of(model, flow, "c.fit") == D.TEST


def test_random_split_has_a_validation_part_in_the_middle():
    model, flow = flow_of(
        """
        from torch.utils.data import random_split
        train_ds, val_ds, test_ds = random_split(ds, [800, 100, 100])
        a.fit(val_ds)
        b.fit(test_ds)
        """
    )
    assert kind_of(model, flow, "a.fit") == D.VAL
    assert kind_of(model, flow, "b.fit") == D.TEST


def test_cross_validation_helpers_and_searches_split_what_they_are_given():
    model, flow = flow_of(
        """
        from sklearn.model_selection import GridSearchCV, cross_val_score
        a.fit(X)
        cross_val_score(clf, X, y, cv=5)
        b.fit(Z)
        grid = GridSearchCV(clf, params)
        grid.fit(Z, y)
        """
    )
    assert kind_of(model, flow, "a.fit") == "full"
    assert kind_of(model, flow, "b.fit") == "full"
    assert {s.kind for s in flow.splits.values()} == {"cv"}


# --- transformers, taint and sinks -----------------------------------------------------------------


def test_fit_transform_output_carries_the_fit_to_its_sinks():
    model, flow = flow_of(
        """
        from sklearn.preprocessing import StandardScaler
        scaler = StandardScaler()
        X_s = scaler.fit_transform(X)
        plt.scatter(X_s[:, 0], X_s[:, 1])
        X_train, X_test, y_train, y_test = train_test_split(X_s, y)
        """
    )
    fit = fit_at(model, flow, "scaler.fit_transform")
    assert fit.kind == D.TRANSFORMER and fit.cls == "StandardScaler"
    uses = flow.sinks[fit.fid]
    assert [u.what for u in uses] == ["split"]  # the plot is not a sink
    assert uses[0].x_position


def test_transform_by_a_fitted_transformer_carries_its_fit():
    model, flow = flow_of(
        """
        from sklearn.decomposition import PCA
        pca = PCA(5).fit(X)
        X_train, X_test = train_test_split(X)
        clf.fit(pca.transform(X_train))
        """
    )
    fit = fit_at(model, flow, "PCA(5).fit")
    assert [u.what for u in flow.sinks[fit.fid]] == ["fit"]
    assert flow.relevant(flow.sinks[fit.fid][0])  # reaches a model with split rows


def test_column_taint_follows_columns_and_drop():
    model, flow = flow_of(
        """
        from sklearn.preprocessing import LabelEncoder
        df["label"] = LabelEncoder().fit_transform(df["label"])
        X = df.drop("label", axis=1)
        y = df["label"]
        X_train, X_test, y_train, y_test = train_test_split(X, y)
        """
    )
    fit = fit_at(model, flow, "fit_transform")
    uses = flow.sinks[fit.fid]
    assert uses and not any(u.x_position for u in uses)  # only the target carries it


def test_objects_are_classified_by_their_constructor():
    model, flow = flow_of(
        """
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.linear_model import LogisticRegression
        from imblearn.over_sampling import SMOTE
        pipe = make_pipeline(StandardScaler(), LogisticRegression())
        pipe.fit(X, y)
        X_r, y_r = SMOTE().fit_resample(X, y)
        LogisticRegression().fit(X_r, y_r)
        """
    )
    assert fit_at(model, flow, "pipe.fit").kind == D.PIPELINE
    assert fit_at(model, flow, "fit_resample").kind == D.RESAMPLER
    assert fit_at(model, flow, "LogisticRegression().fit").kind == D.ESTIMATOR


def test_stateless_transformers_are_not_fits_that_learn():
    model, flow = flow_of(
        """
        from sklearn.preprocessing import Normalizer
        Xn = Normalizer().fit_transform(X)
        """
    )
    assert all(f.kind != D.TRANSFORMER for f in flow.fits)


# --- models and evaluations -------------------------------------------------------------------------


def test_evaluations_record_the_rows_they_score():
    model, flow = flow_of(
        """
        from sklearn.ensemble import RandomForestClassifier
        X_train, X_test, y_train, y_test = train_test_split(X, y)
        rf = RandomForestClassifier().fit(X, y)
        print(rf.score(X_test, y_test))
        """
    )
    fit = fit_at(model, flow, "fit(X, y)")
    (evaluation,) = flow.evals
    assert evaluation.key == fit.key and evaluation.order > fit.order
    assert flow.classify(evaluation.data.rows)[0] == D.TEST


# --- scopes ------------------------------------------------------------------------------------------


def test_a_helper_summary_carries_rows_through_the_call():
    model, flow = flow_of(
        """
        from sklearn.preprocessing import MinMaxScaler

        def scale(frame):
            return MinMaxScaler().fit_transform(frame)

        X = scale(df)
        X_train, X_test = train_test_split(X)
        """
    )
    fit = fit_at(model, flow, "fit_transform")
    assert flow.classify(fit.rows)[0] == "full"  # the caller's df, split by the caller


def test_parameters_are_opaque_roots():
    model, flow = flow_of(
        """
        from sklearn.preprocessing import StandardScaler

        def prep(X):
            return StandardScaler().fit_transform(X)
        """
    )
    fit = fit_at(model, flow, "fit_transform")
    assert flow.classify(fit.rows) == (None, None)
    assert flow.opaque(fit.rows)


def test_branches_are_joined():
    model, flow = flow_of(
        """
        from sklearn.preprocessing import StandardScaler
        if scale:
            X = StandardScaler().fit_transform(X)
        else:
            X = X.copy()
        X_train, X_test = train_test_split(X)
        """
    )
    fit = fit_at(model, flow, "fit_transform")
    assert [u.what for u in flow.sinks[fit.fid]] == ["split"]


def test_keras_validation_split_holds_out_rows_of_what_fit_is_given():
    model, flow = flow_of(
        """
        from sklearn.preprocessing import StandardScaler
        X = StandardScaler().fit_transform(X)
        net.fit(X, y, epochs=10, validation_split=0.2)
        """
    )
    fit = fit_at(model, flow, "fit_transform")
    assert flow.classify(fit.rows)[0] == "full"
    assert any(s.kind == "validation_split" for s in flow.splits.values())
    assert any(u.what == "split" and flow.relevant(u) for u in flow.sinks[fit.fid])


def test_torch_subset_with_split_indices_takes_that_part():
    model, flow = flow_of(
        """
        from torch.utils.data import Subset
        from sklearn.model_selection import train_test_split
        train_idx, test_idx = train_test_split(range(len(ds)), test_size=0.2)
        a.fit(Subset(ds, test_idx))
        """
    )
    assert kind_of(model, flow, "a.fit") == D.TEST


def test_lists_built_by_append_carry_what_is_appended():
    model, flow = flow_of(
        """
        windows = []
        for i in range(60, len(series)):
            windows.append(series[i - 60:i])
        m.fit(np.array(windows))
        frame_all = X_train.append(X_test)  # pandas: a new frame, X_train unchanged
        n.fit(X_train)
        """
    )
    windows_fit = fit_at(model, flow, "m.fit")
    assert windows_fit.rows
    series_root = {root for root, _ in windows_fit.rows}
    assert len(series_root) == 1  # the windows are rows of `series`
    assert len(fit_at(model, flow, "n.fit").rows) == 1  # X_test did not flow into X_train


def test_a_head_and_a_tail_slice_of_the_same_rows_split_them_even_with_overlap():
    model, flow = flow_of(
        """
        a.fit(scaled)
        train = scaled[0:n_train, :]
        test = scaled[n_train - 60:, :]
        b.fit(train)
        c.fit(test)
        """
    )
    assert kind_of(model, flow, "a.fit") == "full"
    assert kind_of(model, flow, "b.fit") is None
    assert kind_of(model, flow, "c.fit") == D.TEST


def test_assigned_names_decide_which_slice_is_held_out():
    model, flow = flow_of(
        """
        (X_full, y_full), (X_test, y_test) = mnist.load_data()
        X_valid, X_train = X_full[:5000] / 255.0, X_full[5000:] / 255.0
        a.fit(X_train.reshape(-1, 784))
        b.fit(X_valid)
        """
    )
    assert kind_of(model, flow, "a.fit") is None
    assert kind_of(model, flow, "b.fit") == D.TEST
    (split,) = [s for s in flow.splits.values() if s.confirmed]
    assert split.names_of(D.TRAIN) == ["X_train"] and split.names_of(D.TEST) == ["X_valid"]


# --- real-code shapes: old spellings, refits, keyed and named splits ---------------------------------


def test_fit_sample_is_the_old_name_of_fit_resample():
    model, flow = flow_of(
        """
        from imblearn.under_sampling import RandomUnderSampler
        X_train, X_test, y_train, y_test = train_test_split(X, y)
        Xr, yr = RandomUnderSampler().fit_sample(X, y)
        """
    )
    fit = fit_at(model, flow, "fit_sample")
    assert fit.kind == D.RESAMPLER and kind_of(model, flow, "fit_sample") == "full"


def test_a_refit_knows_its_previous_fit_on_the_training_part():
    model, flow = flow_of(
        """
        from sklearn.preprocessing import StandardScaler
        X_train, X_test = train_test_split(X)
        sc = StandardScaler()
        a = sc.fit_transform(X_train)
        b = sc.fit_transform(X_test)
        """
    )
    refit = fit_at(model, flow, "sc.fit_transform(X_test)")
    assert refit.previous is fit_at(model, flow, "sc.fit_transform(X_train)")
    assert kind_of(model, flow, "X_test)") == D.TEST and kind_of(model, flow, "X_train)") is None


def test_a_dict_of_splits_read_by_its_keys_is_a_split():
    model, flow = flow_of(
        """
        parts = dataset.get_idx_split()
        tr, va, te = np.array(parts["train"]), np.array(parts["valid"]), np.array(parts["test"])
        a.fit(X)
        b.fit(X[tr])
        c.fit(X[va])
        d.fit(X[te])
        e.fit(data["train"])
        """
    )
    assert kind_of(model, flow, "a.fit") == "full"
    assert kind_of(model, flow, "b.fit") is None
    assert kind_of(model, flow, "c.fit") == D.VAL
    assert kind_of(model, flow, "d.fit") == D.TEST
    assert kind_of(model, flow, "e.fit") is None  # only one key of `data` is read: not known as a split


def test_masks_held_in_names_and_their_negation_split_the_rows():
    model, flow = flow_of(
        """
        in_train = df.split == "train"
        a.fit(X)
        b.fit(X[in_train])
        c.fit(X[~in_train])
        keep = np.random.rand(len(Z)) < 0.8
        d.fit(Z[keep])
        """
    )
    assert kind_of(model, flow, "a.fit") == "full"
    assert kind_of(model, flow, "b.fit") is None
    assert kind_of(model, flow, "c.fit") == D.TEST
    assert kind_of(model, flow, "d.fit") is None  # one part only: not (yet) a split


def test_index_arrays_named_for_a_part_split_the_rows_they_select():
    model, flow = flow_of(
        """
        train_idx, test_idx = load_indices()
        a.fit(X)
        b.fit(X.iloc[train_idx])
        c.fit(X.iloc[test_idx])
        d.fit(W[train_idx])
        """
    )
    assert kind_of(model, flow, "a.fit") == "full"
    assert kind_of(model, flow, "b.fit") is None
    assert kind_of(model, flow, "c.fit") == D.TEST
    assert kind_of(model, flow, "d.fit") is None  # W's held-out rows are never taken


def test_slice_bounds_are_read_through_the_definitions_that_reach_them():
    model, flow = flow_of(
        """
        a.fit(series)
        if flag == "train":
            lo = 0
            hi = int(len(series) * ratio)
            part_a = series[lo:hi]
        else:
            lo = int(len(series) * ratio)
            hi = len(series)
            part_b = series[lo:hi]
        b.fit(part_a)
        c.fit(part_b)
        """
    )
    assert kind_of(model, flow, "a.fit") == "full"
    assert kind_of(model, flow, "b.fit") is None and kind_of(model, flow, "c.fit") == D.TEST


def test_a_definition_on_one_path_only_is_not_read_as_the_bound():
    model, flow = flow_of(
        """
        hi = 100
        if cond:
            hi = 200
        a.fit(series)
        first = series[:hi]
        """
    )
    (split,) = flow.splits.values()
    uppers, _lowers = split.bounds
    assert "hi" in uppers and "100" not in uppers and "200" not in uppers


def test_the_outputs_of_a_loader_unpacked_into_names_are_different_data():
    model, flow = flow_of(
        """
        X, X_kaggle_test, y, ids = load_data_sparse()
        a.fit(X_kaggle_test)
        b.fit(X)
        for tr, te in StratifiedKFold(5).split(X, y):
            clf.fit(X[tr], y[tr])
        """
    )
    assert kind_of(model, flow, "a.fit") is None  # was "full": X_kaggle_test shared X's rows
    assert kind_of(model, flow, "b.fit") == "full"


def test_a_function_applied_to_a_frame_fits_the_frame_it_is_applied_to():
    model, flow = flow_of(
        """
        def enc(col):
            return LabelEncoder().fit_transform(col)

        df[cats] = df[cats].apply(enc)
        out = df[nums].transform(lambda c: StandardScaler().fit_transform(c))
        a, b = train_test_split(df)
        """
    )
    helper = fit_at(model, flow, "LabelEncoder().fit_transform(col)")
    assert flow.classify_fit(helper)[0] == "full"
    assert kind_of(model, flow, "StandardScaler().fit_transform(c)") == "full"
    assert flow.sinks.get(helper.fid)  # the encoded columns are split


def test_a_dataset_class_that_stores_fitted_output_and_splits_it_in_another_method():
    source = """
        class Data:
            def prep(self):
                self.X = StandardScaler().fit_transform(self.X)

            def cut(self):
                self.X_train, self.X_test = train_test_split(self.X)

        d = Data()
        d.prep()
        d.cut()
        """
    model, flow = flow_of(source)
    fit = fit_at(model, flow, "fit_transform")
    assert flow.self_stores[fit.fid] == {("Data", "X")}
    assert flow.stored_then_split(fit, model) is not None
    model, flow = flow_of(source.replace("d.prep()\n        d.cut()", "d.cut()\n        d.prep()"))
    assert flow.stored_then_split(fit_at(model, flow, "fit_transform"), model) is None


def test_a_side_table_merged_into_two_frames_does_not_join_their_rows():
    model, flow = flow_of(
        """
        import pandas as pd
        train = pd.merge(pd.read_csv("train.csv"), extra, how="left", on="id")
        test = pd.merge(pd.read_csv("test.csv"), extra, how="left", on="id")
        a.fit(test[cols])
        for tr_idx, va_idx in KFold(5).split(train):
            clf.fit(train.iloc[tr_idx], y[tr_idx])
        """
    )
    assert kind_of(model, flow, "a.fit") is None  # was "full" through `extra`'s rows
