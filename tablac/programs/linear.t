// Linear regression (least squares), TABLA Table 3 LinearR: 55 features.
// Objective 0.5*(<w,x> - y)^2 per sample; gradient (<w,x> - y) * x.
m = 55;                        // features
n = 1;                         // threads whose models are averaged (CoSMIC Eq. 3b)

model_input x[m];              // one training sample
model_output y;                // its target value
model w[m];                    // the model
gradient g[m] -> w;            // bound to w: w = w - mu * g  (TABLA 5.1)

iterator i[0:m-1];
iterator t[0:n-1];

learning_rate = 0.01;
mini_batch = 1000;             // samples per thread between aggregations

d = sum[i](w[i] * x[i]);       // prediction: one dot product
e = d - y;                     // residual
g[i] = e * x[i];

w[i] = sum[t](w[i]) / n;       // aggregation: mean of the thread models
