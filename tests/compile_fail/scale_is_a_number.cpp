// scores(q, k, scale): the scale is a number.
// expect: scale_is_a_number
#include <argus/argus.hpp>

#include <string>

using heads =
    argus::tensor<float,
                  argus::shape<argus::batch<2>, argus::head<4>, argus::seq<6>, argus::head_dim<8>>>;

void build(const heads& q, const heads& k) {
  (void)argus::scores(q, k, 0.5f);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::scores(q, k, std::string("0.5"));
#endif
}

int main() { return 0; }
