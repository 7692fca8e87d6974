/* Every op kind the runtime knows, listed once, in qlstm_op_kind order (docs/compiler.md, "Op
 * kinds"). Each entry X(NAME, value, handler, member, block, visit):
 *   NAME     its enum value QLSTM_OP_<NAME> (program_s8.h), whose number `value` is the model
 *            file's and the emitted table's: never renumbered or reused;
 *   handler  its runner, qlstm_op_handler_<handler> (runtime/src/<folder>/<handler>_op.cc);
 *   member, block, visit  its parameter block: the member of OpBlock, the block's C type, and the
 *            description of its fields that the record codec walks (params_codec.h, C++ only).
 * C-compatible. */
#ifndef QLSTM_OP_KINDS_H_
#define QLSTM_OP_KINDS_H_

#define QLSTM_OP_KINDS(X)                                                                                \
  /* qlstm_lstm_s8 over the whole input buffer */                                                        \
  X(LSTM_S8, 0, lstm_s8, lstm, qlstm_lstm_s8_params, visit_lstm_s8_fields)                               \
  /* qlstm_fc_s8 on every position of its input buffer */                                                \
  X(FULLY_CONNECTED_S8, 1, fully_connected_s8, fc, qlstm_fc_s8_params, visit_fc_s8_fields)              \
  /* qlstm_softmax_s8 on every position */                                                               \
  X(SOFTMAX_S8, 2, softmax_s8, softmax, qlstm_softmax_s8_params, visit_softmax_s8_fields)                \
  /* qlstm_table_s8 on every position */                                                                 \
  X(TABLE_S8, 3, table_s8, table, qlstm_table_s8_params, visit_table_s8_fields)                          \
  /* one time step of a sequence buffer into a one-step buffer */                                        \
  X(SELECT_STEP, 4, select_step, select, qlstm_select_step_params, visit_select_step_fields)             \
  /* qlstm_gru_s8 over the whole input buffer */                                                         \
  X(GRU_S8, 5, gru_s8, gru, qlstm_gru_s8_params, visit_gru_s8_fields)                                    \
  /* qlstm_lstm_s16 over the whole (int16) input buffer */                                               \
  X(LSTM_S16, 6, lstm_s16, lstm_s16, qlstm_lstm_s16_params, visit_lstm_s16_fields)                       \
  /* qlstm_fc_s16 on every position of its (int16) input buffer */                                       \
  X(FULLY_CONNECTED_S16, 7, fully_connected_s16, fc_s16, qlstm_fc_s16_params, visit_fc_s16_op_fields)   \
  /* qlstm_requantize on every position: int8 <-> int16 */                                               \
  X(REQUANTIZE, 8, requantize, requantize, qlstm_requantize_params, visit_requantize_fields)             \
  /* qlstm_softmax_s16 on every position of its (int16) input buffer */                                  \
  X(SOFTMAX_S16, 9, softmax_s16, softmax_s16, qlstm_softmax_s16_params, visit_softmax_s16_fields)          \
  /* qlstm_pool_s8: a sequence over time into one step, or each position's image */                      \
  X(POOL_S8, 10, pool_s8, pool, qlstm_pool_s8_params, visit_pool_s8_fields)                             \
  /* qlstm_log_softmax_s8 on every position */                                                           \
  X(LOG_SOFTMAX_S8, 11, log_softmax_s8, log_softmax, qlstm_log_softmax_s8_params, visit_log_softmax_s8_fields) \
  /* qlstm_add_s8 of two buffers' positions (a residual connection) */                                  \
  X(ADD_S8, 12, add_s8, add, qlstm_add_s8_params, visit_add_s8_fields)                                   \
  /* qlstm_mul_s8 of two buffers' positions */                                                           \
  X(MUL_S8, 13, mul_s8, mul, qlstm_mul_s8_params, visit_mul_s8_fields)                                   \
  /* qlstm_embedding_s8: each position's int32 token id to its int8 table row */                         \
  X(EMBEDDING_S8, 14, embedding_s8, embedding, qlstm_embedding_s8_params, visit_embedding_s8_fields)    \
  /* qlstm_layer_norm_s8 on every position */                                                            \
  X(LAYER_NORM_S8, 15, layer_norm_s8, layer_norm, qlstm_layer_norm_s8_params, visit_layer_norm_s8_fields)    \
  /* qlstm_attention_pool_s8: scores (input) and the sequence (second input) into one row per batch row */ \
  X(ATTENTION_POOL_S8, 16, attention_pool_s8, attention, qlstm_attention_pool_s8_params,                   \
    visit_attention_pool_s8_fields)                                                                      \
  /* qlstm_rnn_s8 (the vanilla RNN, tanh or ReLU) over the whole input buffer */                          \
  X(RNN_S8, 17, rnn_s8, rnn, qlstm_rnn_s8_params, visit_rnn_s8_fields)

#endif /* QLSTM_OP_KINDS_H_ */
