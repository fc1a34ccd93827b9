// argus/argus.hpp -- umbrella header: the whole public interface of argus.
#pragma once

#include <argus/concepts.hpp>
#include <argus/config.hpp>
#include <argus/diagnostics/check.hpp>
#include <argus/diagnostics/relations.hpp>
#include <argus/eval/evaluate.hpp>
#include <argus/eval/explain.hpp>
#include <argus/eval/reference.hpp>
#include <argus/expr/attention.hpp>
#include <argus/grad/optimizers.hpp>
#include <argus/grad/training.hpp>
#include <argus/shape/shape.hpp>
#include <argus/shape/split.hpp>
#include <argus/tensor/tensor.hpp>
#include <argus/tensor/tensor_view.hpp>
