// multi_head_attention is built from its four weights (w_q, w_k, w_v, w_o), from the four and
// its four biases, or from nothing (zeros). Three weights (W_o forgotten) were "no matching
// function" with every candidate listed; now the rule and the count. Copies and moves still
// go to the copy and move constructors (the twin).
// expect: module_takes_four_weights_or_eight_tensors
// expect-gcc: Arguments = 3
// expect-clang: '3UL % 4 == 0'
#include <argus/argus.hpp>

#include <utility>

using mha = argus::multi_head_attention<64, 8>;
using weight = argus::tensor<float, argus::shape<argus::model<64>, argus::model<64>>>;

void build(const weight& w_q, const weight& w_k, const weight& w_v, const weight& w_o) {
  mha m(w_q, w_k, w_v, w_o);
  mha copied(m);  // a non-const lvalue: the copy constructor, not the catch-all
  const mha assigned = copied;
  mha moved(std::move(copied));
  m = assigned;
  (void)moved;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const mha misuse(w_q, w_k, w_v);  // W_o left out
  (void)misuse;
#endif
}

int main() { return 0; }
