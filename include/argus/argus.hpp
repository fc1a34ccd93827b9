// argus/argus.hpp -- umbrella header: the whole public interface of argus.
#pragma once

// The headers of the entry points come first, each included from here directly: a compile
// error in one of them is then reported under a two-line include stack, so the rule it names
// stays within the first lines of the message.
// clang-format off
#include <argus/diagnostics/relations.hpp>
#include <argus/tensor/tensor.hpp>
#include <argus/tensor/tensor_view.hpp>
#include <argus/expr/node.hpp>
#include <argus/expr/split_heads.hpp>
#include <argus/expr/merge_heads.hpp>
#include <argus/expr/projection.hpp>
#include <argus/expr/scores.hpp>
#include <argus/expr/mask.hpp>
#include <argus/expr/softmax.hpp>
#include <argus/expr/attend.hpp>
#include <argus/expr/attention.hpp>
#include <argus/eval/evaluate.hpp>
// clang-format on

#include <argus/concepts.hpp>
#include <argus/config.hpp>
#include <argus/diagnostics/check.hpp>
#include <argus/eval/explain.hpp>
#include <argus/eval/packed_weight.hpp>
#include <argus/eval/prepacked.hpp>
#include <argus/eval/reference.hpp>
#include <argus/grad/optimizers.hpp>
#include <argus/grad/training.hpp>
#include <argus/shape/shape.hpp>
#include <argus/shape/split.hpp>
