// Runs an ONNX file with ONNX Runtime (onnxruntime-node, CPU): the independent float reference of
// the foreign corpus (tests/corpus/run_foreign.py).
//
//   node ort_run.js MODEL IN.f32 D0,D1,D2 BATCH_AXIS CALL_BATCH OUT.f32
//
// IN.f32 holds float32 values of shape D0,D1,D2; they are fed to the model's first input in calls
// of CALL_BATCH sequences along BATCH_AXIS (0, or 1 for a sequence-first input). The first
// output of each call is appended to OUT.f32, and the list of their shapes printed as JSON (the
// caller joins them along the output's own batch axis).
const path = require('path');
const fs = require('fs');
const ort = require(process.env.QLSTM_ORT_NODE_MODULES
  ? path.join(process.env.QLSTM_ORT_NODE_MODULES, 'onnxruntime-node') : 'onnxruntime-node');

function take(x, dims, axis, start, count) {
  // Sequences [start, start + count) of a row-major [D0, D1, D2] array along `axis` (0 or 1).
  const shape = dims.slice();
  shape[axis] = count;
  const out = new Float32Array(shape[0] * shape[1] * shape[2]);
  let k = 0;
  for (let i = 0; i < shape[0]; ++i)
    for (let j = 0; j < shape[1]; ++j) {
      const a = axis === 0 ? start + i : i, b = axis === 1 ? start + j : j;
      const from = (a * dims[1] + b) * dims[2];
      out.set(x.subarray(from, from + dims[2]), k);
      k += dims[2];
    }
  return [out, shape];
}

(async () => {
  const [model, input, dimsText, axisText, callText, output] = process.argv.slice(2);
  if (!output) throw new Error('usage: node ort_run.js MODEL IN.f32 D0,D1,D2 BATCH_AXIS CALL_BATCH OUT.f32');
  const dims = dimsText.split(',').map(Number), axis = Number(axisText), perCall = Number(callText);
  const buf = fs.readFileSync(input);
  const x = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
  if (x.length !== dims[0] * dims[1] * dims[2]) throw new Error(`${input}: ${x.length} values, not ${dims}`);
  const session = await ort.InferenceSession.create(model);
  const parts = [], shapes = [];
  for (let start = 0; start < dims[axis]; start += perCall) {
    const [chunk, shape] = take(x, dims, axis, start, Math.min(perCall, dims[axis] - start));
    const result = await session.run({[session.inputNames[0]]: new ort.Tensor('float32', chunk, shape)});
    const y = result[session.outputNames[0]];
    parts.push(Float32Array.from(y.data));
    shapes.push(y.dims.slice());
  }
  const all = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let k = 0;
  for (const p of parts) { all.set(p, k); k += p.length; }
  fs.writeFileSync(output, Buffer.from(all.buffer));
  console.log(JSON.stringify(shapes));
})().catch((e) => { console.error(`ort_run.js: ${e.message}`); process.exit(1); });
