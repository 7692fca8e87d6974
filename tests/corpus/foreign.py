"""The foreign corpus (issue 30, item 9): ONNX files that other people's toolchains wrote (tf2onnx
exports of Keras models, torch exports made by the repositories' own code) and their public
repositories commit, kept here unchanged (tests/corpus/foreign/NAME.onnx; the sha256 below is
checked). run_foreign.py compiles each with qlstm and compares its int8 outputs on held-out inputs
with ONNX Runtime's float outputs on the same inputs, a reference independent of qlstm's importer.

None of these repositories commits data we use: the inputs are made here from a seed with numpy
(inputs()), in the range each repository's code scales its features to (the entry's `inputs`).
"""
import numpy as np

CALIBRATION_SEQUENCES = 200
TEST_SEQUENCES = 400
CALIBRATION_SEED, TEST_SEED = 11, 12

# Keys:
#   name, repo, path, commit, sha256   the file: its name here, where it was committed, its digest
#   producer                           who wrote it (the file's producer_name and version, opset)
#   model                              what it is (layers, input, output)
#   task                               "classify" (class scores: argmax agreement is reported),
#                                      "detect" (a probability per step, thresholded at `threshold`:
#                                      the agreement of the detections is reported) or "regress"
#   shape                              the input as [B, T, I] or [T, B, I] ("B" where the batch
#                                      goes; T the length used where the file leaves it symbolic)
#   call_batch                         sequences per ONNX Runtime call (1 where the file fixes B to 1)
#   inputs                             "unit": features scaled to [0, 1] (a MinMaxScaler's range);
#                                      "zscore": standardized features (mean 0, deviation 1);
#                                      "relu": a ReLU encoder's outputs (>= 0, a tenth or more 0);
#                                      "bounded": features within [-1, 1];
#                                      "ecg": an ECG lead's R peaks over a wandering baseline, each
#                                      window standardized (one feature);
#                                      "text": words one-hot over an alphabet, right-aligned in T
#                                      steps, the steps before them zero (`alphabet`, `vowels`)
#   shared                             the part of each feature's series common to all features
#                                      (sensors of one machine move together; default 0)
#   constant                           {feature: value} for features the data holds constant
#   evidence                           where the repository shows the inputs' scaling
#   compile_args                       what the user adds to qlstm compile (qlstm says when)
#   note                               why, where compile_args change the arithmetic, or (rule
#                                      "report") why the entry is below the pass rule
#   rule                               "pass" (the default): the pass rule of run_foreign.py; "report":
#                                      measured and tabled, not counted as passing, where its int8
#                                      weights alone already fall short of the rule (its check: it
#                                      compiles and runs, and qlstm reads it as ONNX Runtime does)
def _entry(name, repo, path, commit, sha256, producer, model, task, shape, inputs, evidence, **kw):
    e = dict(name=name, repo=repo, path=path, commit=commit, sha256=sha256, producer=producer, model=model,
             task=task, shape=shape, inputs=inputs, evidence=evidence, call_batch=None, compile_args=[], shared=0.0,
             constant={}, rule="pass")
    e.update(kw)
    return e


FOREIGN = [
    _entry("exercise_squats_lstm", "streamlineddesigns/Exercise-Classification", "Assets/Models/Squats/LSTMSquats.onnx",
           "b5f9cc18f8cae9cd65e6d13f783f7fad571c45ae",
           "f4110c8d585b836901f1c99ccd40a5a39477ba26b40f945970b96ebc4cb31458", "tf2onnx 1.16.1, opset 9",
           "Keras LSTM(32) -> LSTM(32), Dense + ReLU, Dense(3) + softmax", "classify", ["B", 8, 392], "relu",
           "LSTMInferenceController.cs: each step is a CNN encoder's 392 ReLU/max-pool outputs, unscaled "
           "(its committed LSTM training CSV spans 0 to 2.2, mean 0.43)"),
    _entry("water_forecast_lstm", "mcklrrn-corpuz/water-forecast-app", "lstm_model.onnx",
           "90c2f3a94d3636ef86523fdfa6799ba8c248a8d3",
           "28edbcc5a6d5ba6efd8d7940d5fddd6ce772e875e29f1c522c4b9505915f7d9f", "tf2onnx 1.17.0, opset 13",
           "Keras LSTM(128) -> LSTM(64), last 30 steps, TimeDistributed(Dense(5)) unrolled", "regress",
           ["B", 120, 5], "unit", "app.py: MinMaxScaler (scaler.pkl) on the five water-quality series",
           shared=0.5),
    _entry("digiflask_lstm", "curfewUnZipper/digi_flask", "lstm_model.onnx", "d4567fb53c87d335c2f5db353f05abbfae08a591",
           "e383913472143e05711b1a2b13cc6c226608b167235e211734e5f9a2c93a7ddb", "tf2onnx 1.17.0, opset 17",
           "Keras LSTM(64) -> LSTM(32), Dense + ReLU, Dense(1)", "regress", ["B", 50, 8], "unit",
           "app.py: MinMaxScaler (scaler.pkl) on fan, temperature, load and power readings", shared=0.5),
    _entry("aircraft_rul_lstm", "SubramaniMokkala/aircraft-predictive-maintenance", "models/lstm_model.onnx",
           "f9296a9d7eab37b33b1c50493962bb9fcf8df0e4",
           "6637c054417144ea0f82f08336ffd5f5ede413d69fcbb3e3b18ee6818a93af8e", "tf2onnx 1.17.0, opset 13",
           "Keras LSTM(64) -> LSTM(32), Dense + ReLU, Dense(1)", "regress", ["B", 30, 17], "unit",
           "notebooks/04_lstm_deep_learning.ipynb: MinMaxScaler on 14 C-MAPSS FD001 sensors and 3 settings "
           "(setting_3 is constant: 0)", shared=0.5, constant={16: 0.0}),
    _entry("earthpulse_lstm", "MatheeshaMihiranga/EarthPulse-AI", "models/lstm_model.onnx",
           "ff3a89f8ada685e83017ff009c1ad4b3a218797d",
           "d9390e309aada7e062a8fd1fb2d0deecd067cb2304408fb2a26204627c3807ef", "tf2onnx 1.16.1, opset 15",
           "Keras LSTM(64), BatchNormalization, LSTM(32), Dense + ReLU, Dense(7) + softmax", "classify",
           ["B", 18, 1], "zscore",
           "models/lstm_classifier.py: StandardScaler on 18 features of a seismic window, fed as 18 steps"),
    _entry("thesis_tsc_lstm", "BernhardRuhm/Bachelor-Thesis", "lstm.onnx", "ebfa699affd4938406d9f3d8330594e81ebaea3e",
           "645383f0ce87687f7de60527cfd7fa7b893a7665b6b26d0a390757cf7ae0c957", "pytorch 2.0.1, opset 14",
           "nn.LSTM(1, 32) sequence-first, batch fixed to 1, Linear(2) + softmax", "classify", [2709, "B", 1],
           "zscore", "src_pytorch/utils.py: the UCR HandOutlines series as the archive gives them (z-normalized)",
           call_batch=1),
    _entry("pose_gru", "Yhc-777/pose-detection", "models/gru_model.onnx", "79440e182e41956cbfcedb6cdbd1c2293f4be1d7",
           "aa4d43b24d1fc4d63f2afe34192de555973ab3f4dd98ec8538a6ab86a48c88e8", "pytorch 2.6.0, opset 11",
           "nn.GRU(34, 64, 2 layers), BatchNorm1d, Linear + ReLU x2, Linear(3) + softmax", "classify",
           ["B", 20, 34], "unit",
           "extract_data.py: 17 keypoints' x, y divided by the dataset's largest coordinate, 20 frames",
           shared=0.5, compile_args=["--max-time-steps", "20"]),
    _entry("optrnn_rnn", "AlirezaMiraliakbar/OptRNN.jl", "test/models/rnn_model.onnx",
           "d23a737d25476b162bbd891a79b1b08d61ed95d1",
           "ec1a648ab318440ec2918ec4aac0879a0dc1ffd49b4fe864df3a664af31812bb", "pytorch 2.9.1, opset 20, IR 9",
           "nn.RNN(3, 8, 2 layers, tanh), batch fixed to 1, the last step, Linear(2)", "regress", ["B", 10, 3],
           "bounded", "test/fs_registeration.jl: the inputs the repository optimizes the model over lie in [-1, 1]",
           call_batch=1),
    _entry("weather_jena_lstm", "tharun2431/weather-tcn-forecasting", "pwa/lstm_model.onnx",
           "992a446761ab9275fa0fb2ba5464e045857d2f23",
           "73bc59679d765224354c81f1fde9f4119c165b37d075e73c44a0de45cf8679f9", "pytorch 2.10.0 (dynamo), opset 18",
           "nn.LSTM(14, 128, 2 layers), h_n[-1], Linear(64) + ReLU, Linear(1)", "regress", ["B", 168, 14], "zscore",
           "pwa/scaler.json: StandardScaler on 14 Jena climate series, 168 hourly steps", shared=0.5),
    _entry("apple_ecg_rpeak_bilstm", "dieterich-lab/AppleDashboard", "models/lstm_model.onnx",
           "b0cb3a283273163b7aa61d85b780f5a027cf5bbf",
           "9a296b4d86842b02508e3dacc82c9c93b8a6e67be72f66c94522642a30d449a6", "tf2onnx 1.14.0, opset 13",
           "Keras Bidirectional(LSTM(64)) x2 on every step, Dense(1) + sigmoid per step (an R-peak detector)",
           "detect", ["B", 1000, 1], "ecg",
           "modules/LSTM_predict.py: 1000-sample windows of an Apple Watch ECG, each standardized; a peak where "
           "the output is at least 0.3", threshold=0.3, compile_args=["--activations", "int16"],
           note="16x8: int8 activations reach 21.8 dB here, where the int8 weights alone allow 32.7 dB"),
    _entry("russtress_bilstm", "mikhail-barg/RusstressNet", "RusstressNet/Data/russtress/model.onnx",
           "a6f8cc494cbf471c5369dc694165c7621fcfda60",
           "e0b3935213f1b66c75ec0b327f7023c395ac49f3a2e212fab8a15b1887ed600c", "keras2onnx 1.5.0, opset 9",
           "Keras Bidirectional(LSTM(64)) with HardSigmoid gates (alpha 0.2, beta 0.5), both final states "
           "flattened, Dense(40) + softmax: the stressed letter of a Russian word", "classify", ["B", 40, 36],
           "text",
           "RusstressNet/AccentModel.cs (PredictInternal): the word, after the last three letters of the word "
           "before it and '_', one-hot over \"'-_\" + a-ya + yo, right-aligned in 40 steps",
           call_batch=1, alphabet="'-_абвгдежзийклмнопрстуфхцчшщъыьэюяё", vowels="аеиоуыэюяё", rule="report",
           note="below the pass rule: its weights rounded to int8 alone fall short of it already (the int8 "
                "weights columns)"),
]


def batch_axis(entry):
    return entry["shape"].index("B")


def inputs(entry, n, seed):
    """n input sequences in the file's layout: per feature a stationary AR(1) series (coefficient
    0.9, so neighbouring steps are close, as sensor series are) of unit deviation, a `shared` part
    of it common to every feature, then mapped into [0, 1] ("unit": 0.5 + 0.2 z, clipped), kept
    ("zscore"), rectified ("relu": max(0, 0.4 + 0.5 z)) or bounded ("bounded": 0.5 z, clipped to
    [-1, 1]); or ("ecg") R peaks every 0.6 to 1.2 s of
    a 512 Hz lead (narrow Gaussian spikes with a smaller T wave after each) over that series as a
    baseline wander, with noise, each window standardized as the repository does."""
    rng = np.random.default_rng(seed)
    shape = [n if d == "B" else d for d in entry["shape"]]
    B, T, I = (shape[0], shape[1], shape[2]) if batch_axis(entry) == 0 else (shape[1], shape[0], shape[2])
    phi = 0.9

    def ar1(features):
        z = np.empty((B, T, features))
        z[:, 0] = rng.standard_normal((B, features))
        noise = rng.standard_normal((B, T, features)) * np.sqrt(1 - phi * phi)
        for t in range(1, T):
            z[:, t] = phi * z[:, t - 1] + noise[:, t]
        return z

    if entry["inputs"] == "text":
        return text_inputs(entry, B, T, I, rng)
    a = entry["shared"]
    z = np.sqrt(1 - a * a) * ar1(I) + a * ar1(1)
    if entry["inputs"] == "ecg":
        t = np.arange(T)[None, :, None]
        period = rng.uniform(0.6, 1.2, (B, 1, 1)) * 512
        phase = rng.uniform(0, 1, (B, 1, 1)) * period
        since = np.mod(t - phase, period)  # samples since the last R peak
        beat = np.exp(-0.5 * (since / 4.0) ** 2) + np.exp(-0.5 * ((period - since) / 4.0) ** 2)
        beat = beat + 0.25 * np.exp(-0.5 * ((since - 0.3 * period) / 20.0) ** 2)
        x = beat + 0.1 * z + 0.03 * rng.standard_normal((B, T, I))
        z = (x - x.mean(axis=1, keepdims=True)) / x.std(axis=1, keepdims=True)
    x = {"unit": lambda: np.clip(0.5 + 0.2 * z, 0.0, 1.0), "zscore": lambda: z, "ecg": lambda: z,
         "relu": lambda: np.maximum(0.0, 0.4 + 0.5 * z),
         "bounded": lambda: np.clip(0.5 * z, -1.0, 1.0)}[entry["inputs"]]()
    for feature, value in entry["constant"].items():
        x[:, :, feature] = value
    if batch_axis(entry) == 1:
        x = np.transpose(x, (1, 0, 2))
    return np.ascontiguousarray(x, dtype=np.float32)


def text_inputs(entry, B, T, I, rng):
    """B words of 2 to 6 consonant-vowel syllables (the repository skips words of one vowel), seven
    in ten after the last three letters of a word before them and '_', the rest after '_' alone (a
    clause's first word), one-hot over the entry's alphabet and right-aligned in T steps."""
    alphabet, vowels = entry["alphabet"], entry["vowels"]
    consonants = [c for c in alphabet[3:] if c not in vowels]
    assert len(alphabet) == I

    def syllables(n):
        return "".join(rng.choice(consonants) + rng.choice(list(vowels)) for _ in range(n))

    x = np.zeros((B, T, I), dtype=np.float32)
    for b in range(B):
        word = ("" if rng.random() < 0.3 else syllables(2)[-3:]) + "_" + syllables(int(rng.integers(2, 7)))
        x[b, np.arange(T - len(word), T), [alphabet.index(c) for c in word]] = 1.0
    return x
