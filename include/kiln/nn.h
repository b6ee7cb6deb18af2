// kiln::nn: modules (layers, containers, losses) and initializers. See docs/nn.md.
#pragma once
#include <kiln/nn/attention.h>
#include <kiln/nn/container.h>
#include <kiln/nn/conv.h>
#include <kiln/nn/init.h>
#include <kiln/nn/linear.h>
#include <kiln/nn/loss.h>
#include <kiln/nn/module.h>
#include <kiln/nn/norm.h>
#include <kiln/nn/rnn.h>
#include <kiln/nn/transformer.h>
