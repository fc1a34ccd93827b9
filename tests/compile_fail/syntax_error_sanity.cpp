// Sanity check of the compile-fail machinery: under ARGUS_EXPECT_COMPILE_ERROR this file has
// a syntax error, so a checker that passed it without looking at the output would be wrong.
// expect: expected

int main() {
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  return 0
#else
  return 0;
#endif
}
