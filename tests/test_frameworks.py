"""Framework detection (mllint/frameworks.py): files written for TensorFlow, Keras, JAX or
Flax and not for torch get no torch rule; sklearn's ML003 stays; files without any
framework import are linted as before."""

from __future__ import annotations

import json
import textwrap

import pytest

from cli_helpers import BAD, run, write
from mllint import engine
from mllint.frameworks import OTHER, TORCH, UNKNOWN, framework_of_imports, framework_of_source
from mllint.registry import all_rules

RULES = list(all_rules().values())

# A TensorFlow training loop with a transformers model: ML002 used to report both forwards.
TF_SCRIPT = textwrap.dedent("""\
    import tensorflow as tf
    from transformers import TFAutoModelForSequenceClassification

    model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
    optimizer = tf.keras.optimizers.Adam(3e-5)
    for batch in train_loader:
        with tf.GradientTape() as tape:
            loss = model(batch, training=True).loss
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    for batch in test_loader:
        preds = model(batch, training=False).logits
    """)

LEAKY_SKLEARN = textwrap.dedent("""\
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler
    X_scaled = StandardScaler().fit_transform(X)
    X_train, X_test, y_train, y_test = train_test_split(X_scaled, y)
    """)


@pytest.mark.parametrize("source,expected", [
    ("import torch\n", TORCH),
    ("from torch import nn\n", TORCH),
    ("import torchvision.models as models\n", TORCH),
    ("import pytorch_lightning as pl\n", TORCH),
    ("from accelerate import Accelerator\n", TORCH),
    ("import tensorflow as tf\n", OTHER),
    ("from tensorflow import keras\n", OTHER),
    ("import tensorflow.keras.layers as L\n", OTHER),
    ("import keras\n", OTHER),
    ("import jax\nimport jax.numpy as jnp\n", OTHER),
    ("from flax import linen as nn\nimport optax\n", OTHER),
    ("import tensorflow as tf\nimport torch\n", TORCH),  # mixed: torch rules stay
    ("import keras\nimport lightning\n", TORCH),
    ("def f():\n    import jax\n", OTHER),  # imports anywhere in the file
    ("try:\n    import torch\nexcept ImportError:\n    torch = None\nimport tensorflow\n", TORCH),
    # transformers alone is ambiguous: its plain model classes are torch ones
    ("from transformers import AutoModel, AutoTokenizer\n", UNKNOWN),
    ("from transformers import TFAutoModel\n", OTHER),
    ("import transformers\nm = transformers.TFBertModel.from_pretrained('b')\n", OTHER),
    ("import transformers as hf\nm = hf.FlaxAutoModel.from_pretrained('b')\n", OTHER),
    ("from transformers import TFAutoModel\nimport torch\n", TORCH),
    ("from transformers import AutoTokenizer\nTFIDF_SIZE = 3\nTFIDF()\n", UNKNOWN),  # not a transformers class
    # nothing about a framework: unknown, linted as before
    ("x = 1\n", UNKNOWN),
    ("import numpy as np\nfrom sklearn.linear_model import LogisticRegression\n", UNKNOWN),
    ("from .models import Net\nfrom . import data\n", UNKNOWN),
    ("import tensorflow_datasets as tfds\n", UNKNOWN),  # data loading, used with torch too
    ("keras = load()\nkeras.layers.Dense(1)\n", UNKNOWN),  # a local name, not an import
])
def test_framework_of_source(source, expected):
    assert framework_of_source(source) == expected


def test_framework_of_unparsable_source_is_none():
    assert framework_of_source("def f(:\n") is None


def test_framework_of_imports_ignores_relative_imports():
    assert framework_of_imports([".models", "..jax"]) == UNKNOWN
    assert framework_of_imports(["jax.numpy"]) == OTHER


def test_rules_say_which_framework_they_are_about():
    by_code = all_rules()
    assert by_code["ML003"].framework == "sklearn" and by_code["ML100"].framework is None
    torch_rules = {"ML001", "ML002", "ML004", "ML005", "ML006", "ML007", "ML008", "ML009", "ML010", "ML011",
                   "ML012", "ML013", "ML014"}
    assert all(by_code[code].framework == TORCH for code in torch_rules)
    assert {r.code for r in engine.without_torch_rules(RULES)} == {"ML003", "ML100"}


def codes(source, path="train.py", **kwargs):
    return [(f.code, f.line) for f in engine.lint_source(source, path, RULES, **kwargs)]


def test_tensorflow_file_gets_no_torch_findings():
    assert codes(TF_SCRIPT) == []
    assert codes(TF_SCRIPT, screen=False) == []  # the screen does not decide it
    # The same code in a file that also imports torch is judged as torch code.
    assert [code for code, _ in codes("import torch\n" + TF_SCRIPT)] == ["ML002", "ML002"]


def test_jax_loop_with_torch_like_names_gets_no_torch_findings():
    jax_bad = BAD.replace("import torch\n", "import jax\n").replace("torch.nn.Linear", "Dense").replace(
        "torch.optim.SGD", "Sgd")
    assert codes(jax_bad) == []
    # a file with no framework import at all is linted as before
    no_import = BAD.replace("import torch\n", "")
    assert codes(no_import) == [("ML001", 5)]


def test_sklearn_leakage_is_reported_in_a_keras_file():
    keras_file = "from tensorflow import keras\n" + LEAKY_SKLEARN
    assert codes(keras_file) == [("ML003", 4)]


def test_unused_noqa_leaves_torch_codes_alone_in_a_tensorflow_file():
    source = TF_SCRIPT.replace("preds = model(batch, training=False).logits",
                               "preds = model(batch, training=False).logits  # noqa: ML002")
    assert codes(source) == []  # ML100 included (RULES is every rule): ML002 did not run here


def test_keras_notebook_gets_no_torch_findings_and_keeps_ml003(tmp_path):
    from test_notebook import notebook_json

    cells = ["!pip install tensorflow torch \\\n    transformers\n",
             "import tensorflow as tf\nfrom transformers import TFAutoModelForSequenceClassification\n",
             'model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-uncased")\n',
             "for batch in test_loader:\n    preds = model(batch, training=False).logits\n",
             LEAKY_SKLEARN]
    write(tmp_path / "keras.ipynb", notebook_json(cells))
    write(tmp_path / "torch.ipynb", notebook_json(["import torch\n"] + cells))
    proc = run(["--no-cache", "--format", "json", "keras.ipynb", "torch.ipynb"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    found = sorted((f["path"], f["code"], f["cell"], f["line"]) for f in json.loads(proc.stdout))
    assert found == [("keras.ipynb", "ML003", 5, 3),
                     ("torch.ipynb", "ML002", 5, 2), ("torch.ipynb", "ML003", 6, 3)]
