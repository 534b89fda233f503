// The depthwise convolution on NHWC activations (f16/bf16/f32, any kernel size, stride,
// padding, dilation): the device template tk_depthwise and renderDepthwise's wrapper.
#include "LibrarySources.h"

#include "tensorc/Support/StrCat.h"

namespace tensorc::cuda::kernels {

namespace detail {

const char *depthwiseDevice() {
  // Memory-bound: each block reads its input halo once (16-byte vectors along C, coalesced as
  // consecutive threads take consecutive channel vectors) into shared memory with its filters,
  // then every thread computes ROWS output rows of one output column for one vector of channels,
  // in f32, reading taps from shared memory. Halo rows shared by vertically adjacent output rows
  // are read from shared memory, not again from global.
  return R"(
// ---- tk_depthwise: depthwise convolution, NHWC ----
template <int TYPE_, int KH_, int KW_, int SH_, int SW_, int DH_, int DW_, int TH_, int TW_, int CB_, int ROWS_, bool VECTOR_>
struct TkDwConfig {
  static constexpr int TYPE = TYPE_, KH = KH_, KW = KW_, SH = SH_, SW = SW_, DH = DH_, DW = DW_;
  static constexpr int TH = TH_, TW = TW_, CB = CB_, ROWS = ROWS_;
  static constexpr bool VECTOR = VECTOR_;
  using T = typename TkType<TYPE>::T;
  static constexpr int VEC = 16 / (int)sizeof(T), CV = CB / VEC;
  static constexpr int THREADS = CV * TW * (TH / ROWS);
  static constexpr int IH = (TH - 1) * SH + (KH - 1) * DH + 1, IW = (TW - 1) * SW + (KW - 1) * DW + 1;
  static constexpr int IN_BYTES = IH * IW * CB * (int)sizeof(T);
  static constexpr int SMEM = IN_BYTES + KH * KW * CB * (int)sizeof(T);
  static_assert(CB % VEC == 0 && TH % ROWS == 0, "whole vectors and row runs");
};

template <class C, class EpiV, class Epi1>
TC_DEVICE void tk_depthwise(const typename C::T *__restrict__ input, const typename C::T *__restrict__ weight,
                            long long batches, int h, int w, int c, int oh, int ow, int padH, int padW,
                            unsigned char *smem, EpiV epiV, Epi1 epi1) {
  using T = typename C::T;
  using V = TkVec<T, C::VEC>;
  constexpr int VEC = C::VEC, CV = C::CV, CB = C::CB;
  T *tile = reinterpret_cast<T *>(smem), *filt = reinterpret_cast<T *>(smem + C::IN_BYTES);
  const int tid = threadIdx.x;
  const int cv = tid % CV, ox = (tid / CV) % C::TW, oy0 = (tid / (CV * C::TW)) * C::ROWS;
  const long long tilesH = (oh + C::TH - 1) / C::TH, tilesW = (ow + C::TW - 1) / C::TW;
  const long long tilesC = (c + CB - 1) / CB, units = batches * tilesH * tilesW * tilesC;
  // One vector of channels [ch, ch + VEC) of pixel `p` (null: zero), where `limit` = c - ch.
  auto fetch = [&](const T *p, int limit) {
    V v;
    if (C::VECTOR && p && limit >= VEC) {
      v = *reinterpret_cast<const V *>(p);
    } else {
      #pragma unroll
      for (int e = 0; e < VEC; ++e)
        v.v[e] = (p && e < limit) ? p[e] : (T)0;
    }
    return v;
  };
  for (long long unit = blockIdx.x; unit < units; unit += gridDim.x) {
    // Channel tiles vary fastest: neighbouring blocks read the same pixels' other channels.
    const int tc = (int)(unit % tilesC);
    long long rest = unit / tilesC;
    const int tw = (int)(rest % tilesW);
    rest /= tilesW;
    const int th = (int)(rest % tilesH);
    const long long n = rest / tilesH;
    const int c0 = tc * CB, oh0 = th * C::TH, ow0 = tw * C::TW;
    const int ih0 = oh0 * C::SH - padH, iw0 = ow0 * C::SW - padW;
    const T *image = input + n * h * w * c;
    for (int i = tid; i < C::IH * C::IW * CV; i += C::THREADS) {
      const int v = i % CV, pix = i / CV, y = pix / C::IW, x = pix - y * C::IW;
      const int ih = ih0 + y, iw = iw0 + x, ch = c0 + v * VEC;
      const bool in = (unsigned)ih < (unsigned)h && (unsigned)iw < (unsigned)w;
      *reinterpret_cast<V *>(tile + pix * CB + v * VEC) =
          fetch(in ? image + ((long long)ih * w + iw) * c + ch : nullptr, c - ch);
    }
    for (int i = tid; i < C::KH * C::KW * CV; i += C::THREADS) {
      const int v = i % CV, tap = i / CV, ch = c0 + v * VEC;
      *reinterpret_cast<V *>(filt + tap * CB + v * VEC) = fetch(weight + (long long)tap * c + ch, c - ch);
    }
    __syncthreads();

    float acc[C::ROWS][VEC];
    #pragma unroll
    for (int r = 0; r < C::ROWS; ++r)
      #pragma unroll
      for (int e = 0; e < VEC; ++e)
        acc[r][e] = 0.0f;
    #pragma unroll
    for (int kh = 0; kh < C::KH; ++kh) {
      #pragma unroll
      for (int kw = 0; kw < C::KW; ++kw) {
        const V wv = *reinterpret_cast<const V *>(filt + (kh * C::KW + kw) * CB + cv * VEC);
        float wf[VEC];
        #pragma unroll
        for (int e = 0; e < VEC; ++e)
          wf[e] = TkType<C::TYPE>::widen(wv.v[e]);
        #pragma unroll
        for (int r = 0; r < C::ROWS; ++r) {
          const int y = (oy0 + r) * C::SH + kh * C::DH, x = ox * C::SW + kw * C::DW;
          const V xv = *reinterpret_cast<const V *>(tile + (y * C::IW + x) * CB + cv * VEC);
          #pragma unroll
          for (int e = 0; e < VEC; ++e)
            acc[r][e] = fmaf(TkType<C::TYPE>::widen(xv.v[e]), wf[e], acc[r][e]);
        }
      }
    }
    #pragma unroll
    for (int r = 0; r < C::ROWS; ++r) {
      const int y = oh0 + oy0 + r, x = ow0 + ox, ch = c0 + cv * VEC;
      if (y >= oh || x >= ow || ch >= c)
        continue;
      const long long pixel = (n * oh + y) * ow + x;
      tk_epilogue_row<VEC>(epiV, epi1, 0ll, pixel, (long long)ch, (long long)c, acc[r]);
    }
    __syncthreads(); // the tile is read before the next unit overwrites it
  }
}
)";
}

} // namespace detail

KernelSource renderDepthwise(const DepthwiseSpec &spec, std::string &error) {
  const DepthwiseSpec &s = spec;
  int size = s.type == ElemType::F32 ? 4 : 2, vec = 16 / size;
  if (s.kh < 1 || s.kw < 1 || s.strideH < 1 || s.strideW < 1 || s.dilationH < 1 ||
      s.dilationW < 1 || s.padH < 0 || s.padW < 0 || s.h < 1 || s.w < 1 || s.c < 1 || s.oh() < 1 ||
      s.ow() < 1) {
    error = strCat(s.name, ": depthwise geometry has no output");
    return {};
  }
  if (s.channelsPerBlock % vec || s.tileH % s.rowsPerThread || s.tileW < 1) {
    error = strCat(s.name, ": ", s.channelsPerBlock, " channels per block are not whole ", vec,
                   "-element vectors, or ", s.tileH, " rows not whole runs of ", s.rowsPerThread);
    return {};
  }
  int threads = s.channelsPerBlock / vec * s.tileW * (s.tileH / s.rowsPerThread);
  if (threads < 32 || threads > 1024 || threads % 32) {
    error = strCat(s.name, ": the depthwise tile gives ", threads,
                   " threads (a multiple of 32 up to 1024 is needed)");
    return {};
  }
  int ih = (s.tileH - 1) * s.strideH + (s.kh - 1) * s.dilationH + 1;
  int iw = (s.tileW - 1) * s.strideW + (s.kw - 1) * s.dilationW + 1;
  int smem = (ih * iw + s.kh * s.kw) * s.channelsPerBlock * size;
  bool vector = s.aligned16 && s.c % vec == 0;
  std::string t = s.type == ElemType::F32 ? "float" : "unsigned short";
  int type = s.type == ElemType::F16 ? 0 : s.type == ElemType::BF16 ? 1 : 2;

  KernelSource k;
  k.name = s.name;
  k.threads = threads;
  k.smemBytes = smem;
  k.params = detail::kernelParams(
      {strCat("const ", t, " *__restrict__ input"), strCat("const ", t, " *__restrict__ weight")},
      s.epilogue, {}, s.scalarParams, s.params);
  std::string config =
      strCat("TkDwConfig<", type, ", ", s.kh, ", ", s.kw, ", ", s.strideH, ", ", s.strideW, ", ",
             s.dilationH, ", ", s.dilationW, ", ", s.tileH, ", ", s.tileW, ", ", s.channelsPerBlock,
             ", ", s.rowsPerThread, ", ", vector ? "true" : "false", ">");
  std::string body = strCat(
      "  TK_DYNAMIC_SMEM(tk_smem);\n", "  const long long tk_batches = (", s.batch, ");\n",
      "  tk_depthwise<", config, ">(", s.inputExpr, ", ", s.weightExpr, ", tk_batches, ", s.h, ", ",
      s.w, ", ", s.c, ", ", s.oh(), ", ", s.ow(), ", ", s.padH, ", ", s.padW, ", tk_smem,\n",
      detail::epilogueLambdas(s.epilogue, vec, "tk_b", "tk_c", "      ", true), ");\n");
  k.source = detail::wrapKernel(k, body);
  k.units = strCat("(", s.batch, ") * ", (s.oh() + s.tileH - 1) / s.tileH, " * ",
                   (s.ow() + s.tileW - 1) / s.tileW, " * ",
                   (s.c + s.channelsPerBlock - 1) / s.channelsPerBlock);
  return k;
}

} // namespace tensorc::cuda::kernels
