"""fedrepro.nn -- a small numpy neural-network engine over flat parameter vectors.

Public API (stable)::

    from fedrepro.nn import build_model, SGD, evaluate

    model = build_model("cnn1")        # "cnn2", "mlp1", "mlp2", "aspire_mlp_shl", ... (see MODELS)
    model.n_params                     # int
    w = model.init(rng)                # flat float32 vector (n_params,); rng: numpy Generator
    loss, grad = model.loss_and_grad(w, X, y)          # mean loss of one batch, grad (n_params,)
    loss, grad = model.loss_and_grad(w, X, y, rng=g)   # training mode: dropout drawn from g
    loss, grad = model.loss_and_grad(w, X, y, head="logits_ce")   # head override
    scores = model.predict(w, X)       # logits (B, classes), eval mode
    evaluate(model, w, X_test, y_test, batch=256)      # {"accuracy": ..., "loss": ...}

    opt = SGD(lr=0.1, momentum=0.5)    # torch.optim.SGD semantics, in place
    opt.step(w, grad)

* X is (B, C, H, W) for image models or (B, features); any per-example shape of the
  right size is reshaped in C order (PyTorch's flatten). X is cast to w's dtype,
  y holds integer labels. Everything runs in the dtype of ``w``: float32 by default
  (``build_model(..., dtype=np.float64)`` for gradient checks); no float64 upcasts.
* Without ``rng`` dropout is off (eval mode); with it, inverted dropout masks are
  drawn from it layer by layer, so a seed fixes the masks.
* The flat vector concatenates, layer by layer, the weight then the bias, each in
  PyTorch's layout (conv weight (out, in, kh, kw), dense weight (out, in)), C
  order; ``model.slots`` names every slice, so a PyTorch ``state_dict`` in module
  order maps onto it by slicing. ``model.unflatten(w)`` gives per-layer views.
* Heads (:mod:`fedrepro.nn.heads`): ``softmax_ce`` -- the FedADMM authors' double
  softmax, loss = -log softmax(softmax(z))_y (default of the 003 models) -- and
  ``logits_ce``, standard cross-entropy (default of the 002 models).
* Init rules (:mod:`fedrepro.nn.initializers`): ``torch`` (PyTorch default for
  Linear/Conv2d), ``glorot`` (Glorot-uniform, zero bias), ``zeros``.
* Models are declared as tuples of layer specs (:mod:`fedrepro.nn.zoo`); new ones
  via ``ModelSpec(input_shape, layers, init, head)`` and ``build_model(spec)``.
* Image activations are channel-last inside the engine (conv = im2col through a
  strided view + one GEMM; max-pool by reshape with a saved argmax) and feature
  vectors feature-major, (F, B) (a dense layer is one GEMM W x; bias, ReLU and the
  heads are compiled loops, :mod:`fedrepro.nn.kernels`); this is invisible from outside.
"""
from fedrepro.nn.heads import HEADS, logits_ce, softmax_ce
from fedrepro.nn.initializers import INIT_RULES
from fedrepro.nn.layers import (Conv2d, Dense, Dropout, Flatten, Layer, MaxPool2d, ReLU, conv2d, dense,
                                dropout, flatten, maxpool2d, relu)
from fedrepro.nn.metrics import evaluate
from fedrepro.nn.model import Model, ParamSlot
from fedrepro.nn.optim import SGD
from fedrepro.nn.zoo import MODELS, ModelSpec, build_model, fedadmm_cnn, mlp

__all__ = [
    "build_model", "Model", "ModelSpec", "MODELS", "ParamSlot", "SGD", "evaluate",
    "HEADS", "softmax_ce", "logits_ce", "INIT_RULES",
    "Layer", "Dense", "Conv2d", "MaxPool2d", "ReLU", "Flatten", "Dropout",
    "dense", "conv2d", "maxpool2d", "relu", "flatten", "dropout", "fedadmm_cnn", "mlp",
]
