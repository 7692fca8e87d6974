// Ops compared field by field, each field named by the one description of its kind's block
// (qlstm::visit_op_fields): a field the description names is compared.
#ifndef QLSTM_TESTS_OP_FIELDS_H_
#define QLSTM_TESTS_OP_FIELDS_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "qlstm/params_codec.h"

namespace testing_support {

struct Field {
  std::string name;
  std::vector<int64_t> values;
};

// The op flattened by the description itself: a field the description names is compared.
struct FieldList {
  std::vector<Field> fields;
  void open(const char*) {}
  void close() {}
  void unused(const char*) {}
  void i32(const char* name, int32_t v) { fields.push_back({name, {v}}); }
  template <class T>
  void array(const char* name, const T* data, int64_t count) {
    Field f{name, {}};
    for (int64_t k = 0; k < count; ++k) f.values.push_back(data[k]);
    fields.push_back(f);
  }
};

// A parameter block's record as the codec writes it; visit: e.g. qlstm::visit_gru_s8_fields.
// absent: the fields whose names contain it are left out, as an earlier version wrote the record
// (".hard_sigmoid": an int8 LSTM's before version 13).
template <class P, class Visit>
std::vector<uint8_t> record_of(const P& block, Visit visit, const char* absent = nullptr) {
  std::vector<uint8_t> record;
  struct Sink {
    std::vector<uint8_t>* out;
    void put(const uint8_t* p, size_t n) { out->insert(out->end(), p, p + n); }
  } sink{&record};
  qlstm::RecordWriter<Sink> w(sink);
  qlstm::RecordWriterWithout<qlstm::RecordWriter<Sink>> without(w, absent);
  visit(block, without);
  return record;
}

inline std::vector<Field> fields_of(const qlstm_op& op) {
  FieldList f;
  qlstm::visit_op_fields(op, f);
  return f.fields;
}

inline void expect_same_ops(const std::vector<qlstm_op>& want, const std::vector<qlstm_op>& got, const std::string& form) {
  ASSERT_EQ(want.size(), got.size()) << form;
  for (size_t k = 0; k < want.size(); ++k) {
    const std::vector<Field> a = fields_of(want[k]), b = fields_of(got[k]);
    ASSERT_EQ(a.size(), b.size()) << form << ": op " << k;
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].name, b[i].name) << form << ": op " << k;
      EXPECT_EQ(a[i].values, b[i].values) << form << ": ops[" << k << "]." << a[i].name;
    }
  }
}

}  // namespace testing_support

#endif  // QLSTM_TESTS_OP_FIELDS_H_
