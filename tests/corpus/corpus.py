"""The corpus of published recurrent models (issue 30, item 9): each entry is the architecture of a
model class in a public repository (cited: repository, file, class), rebuilt here from its facts
(sizes, layers, what forward returns, how it makes its state) by one module of this project's own,
`Published`, trained briefly on synthetic data of its task and exported as that repository's code
exports it. make_corpus.py writes the ONNX files and torch's outputs on held-out inputs;
run_corpus.py compiles each with qlstm and compares the int8 outputs with torch's.

The inputs are made here from a seed with numpy alone (sequences(), the same on every machine), so
only the ONNX files, the labels and torch's outputs are committed.
"""
import numpy as np

CALIBRATION_SEQUENCES = 200
TEST_SEQUENCES = 100
CALIBRATION_SEED, TEST_SEED, TRAIN_SEED = 1, 2, 3
# A "reconstruct" window's two oscillations, in periods per window, and the Adam steps an
# autoencoder is trained for. Trained 300 steps on the forecasters' noisy sines (random
# frequencies), the two autoencoders below output little but the mean (nearly constant); on these
# windows, in 1000 steps, they reconstruct most of it (held-out MSE 0.31 and 0.05 against a mean
# square of 1.09 and 0.98; 0.60 and 0.89 in 300 steps)
RECONSTRUCT_PERIODS = (1, 2)
RECONSTRUCT_AMPLITUDE = 1.5  # the oscillations' spread: a window's mean square near 1
AUTOENCODER_TRAIN_STEPS = 1000

# One entry per repository. Keys:
#   name                      the fixture's name (tests/corpus/models/NAME.onnx)
#   repo, file, cls           where the architecture comes from
#   task                      "classify" (outputs: class scores, labels kept), "binary" (one logit or,
#                             with final sigmoid, a probability; labels kept), "regress" (the next
#                             step's features, or the next out values of every feature step by step)
#                             or "reconstruct" (an autoencoder's: the input sequence itself, [B, T, I])
#   cell                      "lstm", "gru", "rnn" (nn.RNN: no cell state, as the GRU)
#   nonlinearity              cell "rnn": nn.RNN's activation, "tanh" (the default) or "relu"
#   I, stack, bidirectional, batch_first, dropout, T, out
#                             stack: [hidden, layers] of each recurrent module in turn
#   state                     "none" (forward passes no state), "zeros" (torch.zeros in forward, per
#                             module), "zeros_shared" (one torch.zeros state given to every module)
#   read                      "last" (y[:, -1] / y[-1]), "h_n" (h_n[-1]), "h_n_squeeze" (h_n.squeeze(0)),
#                             "cat_h_n" (cat(h_n[-2], h_n[-1])), "view_cat_h_n" (h_n.view(L, 2, B, H)[-1],
#                             its two rows concatenated), "every" (every step: a regressor's per-step
#                             outputs), "every_classify" (every step, a class per sequence: its label
#                             on every step), "last_k" (y[:, -k:], the head on each of those steps:
#                             a regressor's next k values of feature 0, one per step; k: the key "k")
#   decoder, repeat           sequence to sequence (an LSTM autoencoder, batch-first): after the stack
#                             (the encoder), what `read` takes of its last module ("h_n": h_n[-1], or
#                             "last": y[:, -1:]) over the input's steps by "repeat" (.repeat(1, T, 1))
#                             or "expand" (.expand(-1, T, -1)), T = x.shape[1], is the input of the
#                             decoder: [hidden, layers] of each of its modules, from a zero state; the
#                             head then runs on every step of its output
#   bottleneck                an autoencoder's layers between what `read` takes and the repetition (a
#                             latent layer: "linear:N", "relu", "tanh"), in order
#   repeat_steps              "fixed": the repetition's count is the model's own constant (its seq_len,
#                             T), not x.shape[1]
#   unbatched                 forward takes one [T, I] sequence (no batch axis) and makes it a batch of
#                             one itself, the tutorial autoencoder's form: x.reshape((1, T, I)), the
#                             encoder's h_n reshaped to [1, H], .repeat(T, 1), reshaped to [1, T, H]
#                             into the decoder, its output reshaped to [T, H'], the head per step,
#                             .squeeze(-1) (the reshapes hold for I = 1 only); exported with a [T, I]
#                             example, no dynamic axis ("dynamic": "none"); torch runs each held-out
#                             sequence alone, qlstm gets the sequences as [N, T, I] (one per call)
#   train_steps               make_corpus.py's Adam steps, when not its TRAIN_STEPS (an autoencoder
#                             learns to reconstruct its window in more)
#   lr                        make_corpus.py's Adam learning rate, when not 0.005 (the repository's own,
#                             for a model that does not learn at 0.005)
#   head                      the head's layers before its last Linear (to out): "linear:N", "bn"
#                             (BatchNorm1d), "ln" (LayerNorm), "relu", "dropout:P"
#   final                     "none", "sigmoid", "softmax", "log_softmax"
#   opset, dynamic            the export: opset, and "none", "batch" or "batch_time" dynamic axes
#   weights_bound             make_corpus.py also runs the model with int8 weights in float (the SQNR
#                             bound of int8 weights; run_corpus.py then accepts the task's error kept)
#   vocab                     the model reads token ids: an nn.Embedding of `vocab` rows (row 0 the
#                             padding) to I features first; the sequences are ids pre-padded with 0
#                             (Keras' pad_sequences, the default the repositories use)
#   compile_args              what the user adds to qlstm compile (a stack on a dynamic time axis
#                             needs --max-time-steps: qlstm says so)
# No repository below exports to ONNX but MaxRondelli's (an earlier commit: dynamic batch and time
# axes, torch's default opset); the others are exported with torch.onnx.export's defaults (opset 14
# in torch 1.13) and a dynamic batch axis (an unbatched one: no dynamic axis), as a user of that
# code would.
def _entry(name, repo, file, cls, task, cell, I, stack, T, out, read, **kw):
    """stack: (hidden, layers) per recurrent module, in order (a model of two nn.LSTM modules has two)."""
    e = dict(name=name, repo=repo, file=file, cls=cls, task=task, cell=cell, I=I, stack=[list(m) for m in stack], T=T,
             out=out, read=read, bidirectional=False, batch_first=True, dropout=0.0, state="none", head=[],
             final="none", opset=14, dynamic="batch")
    e.update(kw)
    if "decoder" in e:
        e["decoder"] = [list(m) for m in e["decoder"]]  # as JSON reads it back (corpus.json)
    return e


CORPUS = [
    _entry("fall_detection_lstm", "Ren8394/Fall-Detection-Collection", "models/LSTM.py", "LSTM_01", "classify", "lstm",
           3, [(32, 1), (64, 1)], 260, 2, "last"),
    _entry("har_lstm_m5stack", "MaxRondelli/Human-Activity-Recognition-with-LSTM-on-M5Stack", "model.py", "LSTMModel",
           "classify", "lstm", 9, [(32, 2), (32, 2)], 128, 6, "last", batch_first=False, dropout=0.5,
           state="zeros_shared", final="log_softmax", dynamic="batch_time", compile_args=["--max-time-steps", "128"]),
    _entry("kws_lstm_norse", "norse/norse", "norse/task/speech_commands/model.py", "LSTMModel", "classify", "lstm",
           80, [(128, 1)], 81, 10, "h_n_squeeze", batch_first=False, final="log_softmax"),
    _entry("ecg_gru", "rookie-wyh/ecg-classfication", "models/GRU.py", "GRU", "classify", "gru", 1, [(64, 1)], 300, 5,
           "h_n"),
    _entry("stock_lstm_3layer", "go-fireball/stock-predictions", "stock_predictions/stock_lstm.py", "StockLSTM",
           "regress", "lstm", 18, [(100, 3)], 60, 1, "last", dropout=0.2, state="zeros"),
    _entry("stock_lstm_4layer", "shortell/Stock-Predictor", "src/nn_models/lstm_model.py", "StockPredictionLSTM",
           "regress", "lstm", 3, [(128, 4)], 30, 3, "last"),
    _entry("load_forecast_lstm", "yangchen73/Load_Prediction", "model/LSTM.py", "LSTM", "regress", "lstm", 15, [(66, 2)],
           24, 360, "last", dropout=0.2, state="zeros"),
    _entry("air_passengers_lstm", "ywyy1218/model_learning", "LSTM/LSTM2/model.py", "AirModel", "regress", "lstm", 1,
           [(50, 1)], 50, 1, "every"),
    _entry("wind_anomaly_lstm", "faizanhakim/Time_Series---Wind_Anomaly", "ts/model.py", "LSTMAnomalyDetector",
           "regress", "lstm", 4, [(64, 2)], 60, 4, "every", dropout=0.2),
    _entry("network_flow_bilstm", "BigaGrayWolf/advancedNetworkAssignment", "model/models.py", "BiLSTM", "classify",
           "lstm", 8, [(4, 1)], 10, 2, "every_classify", bidirectional=True),
    _entry("track_bigru", "Ayesh17/Sliding_Window_Approach",
           "MultiClass_Classification/MultiClass_classification_Models/Multiclass_Bidirectional_GRU_Model.py",
           "BiGRUClassifier", "classify", "gru", 23, [(128, 2)], 20, 7, "view_cat_h_n", bidirectional=True),
    _entry("phoneme_bigru", "lischilpp/bachelor-thesis-phoneme-recognition-alignment", "src/models/gru.py", "GRUModel",
           "classify", "gru", 30, [(32, 2)], 50, 39, "every_classify", bidirectional=True, dropout=0.2),
    _entry("connect4_lstm", "EverybodyHops/Connect-4", "lstm_model.py", "RNN", "classify", "lstm", 7, [(64, 1)], 6, 3,
           "last"),
    _entry("weather_gru", "mdgolammafuz/AeroCast", "model/gru_model.py", "GRUWeatherForecaster", "regress", "gru", 3,
           [(16, 1)], 24, 1, "last"),
    _entry("asl_landmarks_lstm", "nhaatj2804/Real-time-ASL-Recognition", "lstm/lstm_architecture.py", "LSTMModel",
           "classify", "lstm", 258, [(160, 1)], 80, 9, "max", head=["dropout:0.6", "linear:160", "bn", "relu"]),
    _entry("stock_direction_gru", "pjolteus/fitintytrade", "oracle_ai_model/models/gru_model.py", "GRUTimeSeriesModel",
           "binary", "gru", 5, [(64, 2)], 24, 1, "mean", dropout=0.2, head=["dropout:0.2"]),
    _entry("wake_word_lstm", "Anderrrrr/AutoHousekeeper", "model.py", "LSTMWakeWord", "binary", "lstm", 13, [(64, 2)],
           100, 1, "last", final="sigmoid"),
    _entry("stock_last30_lstm", "xiaojihh/stockPredict", "model.py", "LSTM", "regress", "lstm", 1, [(128, 1)], 180, 1,
           "last_k", k=30, weights_bound=True),
    # usernames of a game's players against generated ones: 68 characters (+ padding) of at most 12,
    # Keras-padded in front; args.json's sizes (hidden 128, 2 layers, 256 linear features)
    _entry("username_lstm", "ChimeraLC/Learned-Time-Limited-Bloom-Filters", "models/lstm.py", "UsernameClassifierLSTM",
           "binary", "lstm", 128, [(128, 2)], 12, 1, "last", state="zeros", vocab=69,
           head=["dropout:0.5", "linear:256", "relu", "dropout:0.5"], final="sigmoid"),
    # the same repository's unidirectional classifier (another file, a later commit): the mean over
    # the window, then a LayerNorm; Multiclass_model_train.py's sizes (hidden 128, 2 layers, dropout
    # 0.2, windows of 20) and the track data's 23 features and 7 behaviours, as track_bigru
    _entry("track_lstm_layer_norm", "Ayesh17/Sliding_Window_Approach",
           "Multi_Class_Classification/Multi_Class_classification_Models/Multiclass_LSTM_model.py", "LSTMClassifier",
           "classify", "lstm", 23, [(128, 2)], 20, 7, "mean", dropout=0.2, head=["ln", "dropout:0.2"]),
    # an nn.RNN (tanh) recognising activities of daily living from a home's binary sensors, one row
    # per second: playground/rnn_playground.ipynb's sizes (hidden 128, 1 layer, activation "tanh",
    # windows of 60 s, no last-layer activation) and the Ordonez data's 7 sensors and 7 activities
    _entry("adl_sensors_rnn", "R3c5/Multi-Modal-Edge-AI",
           "multi_modal_edge_ai/models/adl_inference/torch_models/torch_rnn.py", "TorchRNN", "classify", "rnn", 7,
           [(128, 1)], 60, 7, "last", state="zeros"),
    # LSTM autoencoders (anomaly detection by reconstruction error), h_n[-1] repeated over the
    # window into the decoder, a Linear per step. A vehicle's telemetry (wheel rpm, speed, GPS
    # distance, one row a second): config.yaml's sizes at model.py's commit (hidden 8, 1 layer,
    # windows of 120 s)
    _entry("telemetry_lstm_autoencoder", "nicolascortegoso/telemetry_service", "src/core/models/model.py",
           "LSTMAutoencoder", "reconstruct", "lstm", 3, [(8, 1)], 120, 3, "h_n", decoder=[(8, 1)], repeat="repeat",
           train_steps=AUTOENCODER_TRAIN_STEPS),
    # a bearing's vibration (NASA IMS, one channel): src/config.py's sizes (hidden 64, 1 layer, no
    # dropout, windows of 100 samples)
    _entry("bearing_vibration_lstm_autoencoder", "cale20/nasa-vibration-lstm", "src/models/lstm_autoencoder.py",
           "LSTMAutoencoder", "reconstruct", "lstm", 1, [(64, 1)], 100, 1, "h_n", decoder=[(64, 1)], repeat="repeat",
           train_steps=AUTOENCODER_TRAIN_STEPS),
    # LSTM autoencoders with a latent layer: h_n[-1] through Linears (the bottleneck) before the
    # repetition. A water pipeline's sensors (pressure, flow, temperature, vibration): main.py's
    # sizes (hidden 64, 2 layers, dropout 0.2, latent 16, windows of 50); encoder_fc (64 -> 16) then
    # decoder_fc (16 -> 64), no activation, repeated self.seq_len (50) times. Trained at main.py's
    # learning rate (1e-3): at 0.005 it outputs the window's mean (held-out MSE 1.02 against a mean
    # square of 1.02, in 1000 to 3000 steps; 0.34 at 1e-3 in 1000)
    _entry("water_leak_lstm_autoencoder", "shradhanjalipradhan/LSTM-Autoencoder-multivariate-sensor-anomaly-detector",
           "models/lstm_autoencoder.py", "LSTMAutoencoder", "reconstruct", "lstm", 4, [(64, 2)], 50, 4, "h_n",
           dropout=0.2, bottleneck=["linear:16", "linear:64"], decoder=[(64, 2)], repeat="repeat",
           repeat_steps="fixed", train_steps=AUTOENCODER_TRAIN_STEPS, lr=1e-3),
    # NYC taxi demand (NAB, one value every 30 min): config.yaml's sizes (encoder LSTMs of 64 then
    # 32, one nn.LSTM each; latent 16; decoder LSTMs of 32 then 64; windows of 24); the encoder's
    # fc_latent (32 -> 16) on the last module's h_n[-1], repeated x.size(1) times. Its Dropout(0.1)
    # between modules is not reproduced (the exported eval-mode graph has none)
    _entry("taxi_demand_lstm_autoencoder", "amgainprabesh/lstm-autoencoder-anomaly-detection",
           "models/lstm_autoencoder.py", "LSTMAutoencoder", "reconstruct", "lstm", 1, [(64, 1), (32, 1)], 24, 1,
           "h_n", bottleneck=["linear:16"], decoder=[(32, 1), (64, 1)], repeat="repeat",
           train_steps=AUTOENCODER_TRAIN_STEPS),
    # The widely copied tutorial autoencoder, unbatched: one window of a stock's daily close
    # (Goldman Sachs, standardised) per call, [seq_len, 1], made a batch of one in the encoder
    # (x.reshape((1, seq_len, input_size))); h_n reshaped to [1, 128], .repeat(seq_len, 1) and
    # reshaped to [1, seq_len, 128] into the decoder, whose output is reshaped to [seq_len, 128]
    # before output_layer, then squeezed to [seq_len]. main.py's sizes (seq_len 15, input_size 1,
    # embedding_size 64: LSTMs of 2 * 64 = 128; models/model.pth's shapes agree) and forward as
    # committed: one LSTM on each side (the encoder's LSTM1, 1 -> 128; the decoder's LSTM2, 128 ->
    # 128; the other two are built but their calls are commented out, as the README's "1-layer
    # LSTM for Encoder and also Decoder" says). The repository runs it in float64 (.double());
    # exported here in float32, with a [15, 1] example (its predict() passes x.squeeze(), [15]).
    _entry("stock_close_lstm_autoencoder", "Charlie-Bell/lstm-autoencoder", "src/autoencoder.py", "LSTMAutoencoder",
           "reconstruct", "lstm", 1, [(128, 1)], 15, 1, "h_n", decoder=[(128, 1)], repeat="repeat",
           repeat_steps="fixed", unbatched=True, dynamic="none", train_steps=AUTOENCODER_TRAIN_STEPS),
]


def token_sequences(entry, n, rng, labels):
    """Token ids [n, T]: per class its own first-order chain over the tokens 1 ... vocab - 1 (the same
    chains on every call, from the entry's name; class k's transitions sharper as k grows), each
    sequence 2 to T tokens long, pre-padded with 0."""
    V, T = entry["vocab"], entry["T"]
    classes = int(labels.max()) + 1 if len(labels) else 1
    lang = np.random.default_rng(sum(map(ord, entry["name"])))
    cumulative = []
    for c in range(max(classes, 2)):
        p = np.exp(lang.standard_normal((V - 1, V - 1)) * (0.5 + 2.0 * c))
        cumulative.append(np.cumsum(p / p.sum(1, keepdims=True), axis=1))
    lengths = rng.integers(2, T + 1, n)
    tok = rng.integers(0, V - 1, n)
    x = np.zeros((n, T), np.int64)
    for t in range(T):
        x[:, t] = tok + 1
        u = rng.random(n)
        rows = np.stack([cumulative[labels[i]][tok[i]] for i in range(n)])
        tok = np.minimum((rows < u[:, None]).sum(1), V - 2)
    keep = np.arange(T)[None, :] >= (T - lengths)[:, None]  # the last `length` steps hold tokens
    return np.where(keep, x, 0)


def is_classifier(entry):
    """Its outputs are scored against labels (kept in NAME.labels.npy), not float targets."""
    return entry["task"] in ("classify", "binary")


def sequences(entry, n, seed):
    """n input sequences of the entry's task ([n, T, I] batch-first, [T, n, I] otherwise), and their
    labels (classify: class per sequence) or targets (regress: the next step of feature 0 per step,
    or of the last step when the model reads one step; reconstruct: the sequence itself)."""
    rng = np.random.default_rng(seed)
    T, I = entry["T"], entry["I"]
    if "vocab" in entry:
        labels = rng.integers(0, 2 if entry["task"] == "binary" else entry["out"], n)
        x = token_sequences(entry, n, rng, labels)
        return (x if entry["batch_first"] else np.ascontiguousarray(x.T)), labels.astype(np.int64)
    t = np.arange(T, dtype=np.float64)[None, :, None]
    feature = np.arange(I, dtype=np.float64)[None, None, :]
    if entry["task"] == "reconstruct":
        # correlated sensors: two oscillations per window (of RECONSTRUCT_PERIODS periods, random
        # amplitude and phase per sequence) mixed into the I features by the entry's own fixed
        # weights, with noise; the target is the window itself
        periods = np.array(RECONSTRUCT_PERIODS, np.float64)[None, None, :]
        amp = rng.standard_normal((n, 1, len(RECONSTRUCT_PERIODS)))
        phase = rng.uniform(0, 2 * np.pi, (n, 1, len(RECONSTRUCT_PERIODS)))
        mix = np.random.default_rng(sum(map(ord, entry["name"]))).standard_normal((len(RECONSTRUCT_PERIODS), I))
        mix /= np.linalg.norm(mix, axis=0)  # every feature of the same spread
        x = RECONSTRUCT_AMPLITUDE * (amp * np.sin(2 * np.pi * periods * t / T + phase)) @ mix
        x = x + 0.1 * rng.standard_normal((n, T, I))
        y = x
    elif entry["task"] in ("classify", "binary"):
        classes = 2 if entry["task"] == "binary" else entry["out"]
        labels = rng.integers(0, classes, n)
        k = labels[:, None, None].astype(np.float64)
        freq = (0.03 + 0.04 * (k + 1) / classes) * (1.0 + 0.15 * feature)
        phase = rng.uniform(0, 2 * np.pi, (n, 1, I))
        amp = 0.7 + 0.6 * rng.random((n, 1, 1))
        level = (k / max(classes - 1, 1) - 0.5) * np.where(feature % 2 == 0, 1.0, -0.5)
        x = amp * np.sin(2 * np.pi * freq * t + phase) + level
        x = x + 0.3 * rng.standard_normal((n, T, I))
        y = np.repeat(labels[:, None], T, axis=1) if entry["read"] == "every_classify" else labels
    else:
        out = entry["out"]
        horizon = (1 if entry["read"] == "every" else entry["k"] if entry["read"] == "last_k"
                   else -(-out // I))  # the steps `out` values span
        w = rng.uniform(0.02, 0.12, (n, 1, I))
        phase = rng.uniform(0, 2 * np.pi, (n, 1, I))
        steps = np.arange(T + horizon)[None, :, None]
        s = np.sin(2 * np.pi * w * steps + phase) + 0.5 * np.sin(2 * np.pi * 2.3 * w * steps + 2 * phase)
        s = 1.5 * s + 0.1 * rng.standard_normal((n, T + horizon, I))
        x = s[:, :T]
        # every step: the next step's first `out` features; one output row: the next `out` values
        # of every feature, step by step (a multi-step horizon when out > I)
        # the last k steps: the next k values of feature 0, one per step (as [n, k])
        y = (s[:, 1:T + 1, :out] if entry["read"] == "every" else s[:, T:, 0] if entry["read"] == "last_k"
             else s[:, T:].reshape(n, -1)[:, :out])
    x = x.astype(np.float32)
    if not entry["batch_first"]:
        x = np.ascontiguousarray(np.transpose(x, (1, 0, 2)))
    return x, np.asarray(y, np.int64 if is_classifier(entry) else np.float32)


def predicted(entry, out):
    """A classifier's classes: the argmax, or (binary) the logit above 0 / the probability above 1/2."""
    if entry["task"] == "binary":
        threshold = 0.5 if entry["final"] == "sigmoid" else 0.0
        return (out.reshape(out.shape[0], -1)[:, 0] > threshold).astype(np.int64)
    return out.argmax(-1)
