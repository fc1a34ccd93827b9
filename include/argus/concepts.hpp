// argus/concepts.hpp -- top level: the public concepts, gathered.
#pragma once

#include <argus/expr/mask.hpp>               // Mask
#include <argus/expr/node.hpp>               // Expression, Operand
#include <argus/shape/extent.hpp>            // Axis
#include <argus/shape/shape.hpp>             // Shape
#include <argus/tensor/tensor_concepts.hpp>  // Tensor, TensorView, TensorLike
